"""What an ``interrupt()`` may say beyond its value: the answer's schema, and legacy ids.

``interrupt(value, response_schema=...)`` tells the client what shape the
answer must have. A JSON Schema ``dict`` is only shown; a pydantic model, a
``TypedDict`` or a dataclass is shown as its JSON Schema and also checks the
answer, which ``interrupt()`` then returns validated. An answer that does not
fit raises pydantic's ``ValidationError``, marked so that
:func:`is_invalid_resume` tells it from any other validation error; nothing
is saved for it, so the question can be answered again.

Interrupts saved by LangGraph before 1.0 carry a namespace (``ns``) instead
of an id; :func:`legacy_interrupt_id` turns it into the id LangGraph gives
such an interrupt today (xxHash's XXH3-128, from the optional ``xxhash``
package, as LangGraph computes it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "ResponseSchema",
    "is_invalid_resume",
    "legacy_interrupt_id",
    "mark_invalid_resume",
]

_INVALID_RESUME = "_flowcore_invalid_resume"


def mark_invalid_resume(error: BaseException) -> None:
    """Mark ``error`` as raised by an answer that did not fit its interrupt's schema."""
    setattr(error, _INVALID_RESUME, True)


def is_invalid_resume(error: BaseException) -> bool:
    """Whether ``error`` was raised because an answer did not match its ``response_schema``.

    Example:
        >>> is_invalid_resume(ValueError("nope"))
        False
    """
    return getattr(error, _INVALID_RESUME, False) is True


def legacy_interrupt_id(ns: Sequence[str] | str) -> str:
    """The id of an interrupt saved with a namespace (LangGraph before 1.0).

    A sequence of namespace parts is joined with ``|`` first.

    Example:
        >>> legacy_interrupt_id(["legacy_test"])  # doctest: +SKIP
        'f1fa625689ec006a5b32b76863e22a6c'
    """
    try:
        from xxhash import xxh3_128_hexdigest
    except ImportError as exc:  # pragma: no cover - xxhash comes with LangGraph installs
        raise ImportError(
            "an Interrupt with a legacy ns= needs the xxhash package (pip install xxhash)"
        ) from exc
    joined = ns if isinstance(ns, str) else "|".join(ns)
    digest: str = xxh3_128_hexdigest(joined.encode())
    return digest


class ResponseSchema:
    """The schema an ``interrupt()`` asked its answer to have.

    ``shown`` is what the surfaced ``Interrupt`` carries (JSON Schema, or None);
    :meth:`check` validates an answer when the schema is a Python type.

    Example:
        >>> ResponseSchema.of({"type": "string"}).shown
        {'type': 'string'}
        >>> ResponseSchema.of(None) is None
        True
    """

    __slots__ = ("_adapter", "shown")

    def __init__(self, shown: dict[str, Any] | None, adapter: Any) -> None:
        self.shown = shown
        self._adapter = adapter

    @classmethod
    def of(cls, schema: type[Any] | dict[str, Any] | None) -> ResponseSchema | None:
        """The schema ``interrupt(..., response_schema=schema)`` was given (None: none)."""
        if schema is None:
            return None
        if isinstance(schema, dict):
            return cls(schema, None)
        from pydantic import TypeAdapter

        adapter = TypeAdapter(schema)
        shown: dict[str, Any] = adapter.json_schema()
        return cls(shown, adapter)

    def check(self, answer: Any) -> Any:
        """``answer`` validated against the schema (as it is when the schema is a dict).

        Raises pydantic's ``ValidationError``, marked for :func:`is_invalid_resume`,
        when it does not fit.
        """
        if self._adapter is None:
            return answer
        from pydantic import ValidationError

        try:
            return self._adapter.validate_python(answer)
        except ValidationError as exc:
            mark_invalid_resume(exc)
            raise
