"""How error messages show a value the user passed: short, on one line, and never failing.

``repr`` is not enough for that: an int of more than 4300 digits makes
``repr`` raise ``ValueError``, a deeply nested list makes it raise
``RecursionError``, and a user object's ``__repr__`` can raise anything.
An error message about a bad value must not itself fail on that value.
"""

from __future__ import annotations

__all__ = ["shown"]

_MAX_INT_BITS = 14_000


def shown(value: object, width: int = 200) -> str:
    """``repr(value)``, cut to ``width`` characters, or a description when repr fails.

    Example:
        >>> shown("beta")
        "'beta'"
        >>> shown(10**5000)
        '<an int of about 5001 digits>'
    """
    if type(value) is int and value.bit_length() > _MAX_INT_BITS:
        return f"<an int of about {value.bit_length() * 30103 // 100000 + 1} digits>"
    try:
        text = repr(value)
    except RecursionError:
        return f"<a {type(value).__name__} nested too deeply to show>"
    except Exception as exc:  # a foreign __repr__ may fail any way: show that, never raise it
        return f"<a {type(value).__name__} whose repr() fails: {type(exc).__name__}>"
    if len(text) > width:
        return text[: width - 5] + "...>" if text.startswith("<") else text[: width - 3] + "..."
    return text
