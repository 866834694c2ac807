"""The ``Redactor`` seam: what the engine, the port and the stores need from a redactor."""

from __future__ import annotations

from typing import Any, Final, Protocol, runtime_checkable

__all__ = ["NO_REDACTION", "LearningRedactor", "Redactor", "TextStreamRedactor"]


@runtime_checkable
class TextStreamRedactor(Protocol):
    """Redacts a text that arrives in pieces (one model call's deltas).

    ``feed`` returns the part of the text seen so far that is safe to send
    now (it may hold back a tail that could be the start of a secret);
    ``flush`` returns the rest, redacted, once the text is complete.

    Example:
        >>> stream = NO_REDACTION.text_stream()
        >>> stream.feed("Hel") + stream.feed("lo") + stream.flush()
        'Hello'
    """

    def feed(self, text: str) -> str:
        """Take the next piece; return the text that is safe to send now."""
        ...

    def flush(self) -> str:
        """The text held back so far, redacted; call once, at the end."""
        ...


@runtime_checkable
class Redactor(Protocol):
    """Replaces every known secret in a value by ``"[REDACTED]"``.

    Example:
        >>> NO_REDACTION.redact({"args": {"q": "ducks"}})
        {'args': {'q': 'ducks'}}
    """

    def redact(self, value: Any) -> Any:
        """A copy of ``value`` (deeply, through dicts, lists and strings) without secrets."""
        ...

    def text_stream(self) -> TextStreamRedactor:
        """A fresh redactor for one streamed text."""
        ...


@runtime_checkable
class LearningRedactor(Redactor, Protocol):
    """A redactor that can be told new secrets while runs are going on.

    The block executor tells it the values of input fields a block marks
    secret, and the engine the :class:`~flowcore.secrets.Secret` values of a
    run's input, so their plain text is redacted from then on.

    Example:
        >>> from flowcore.secrets import SecretRedactor
        >>> isinstance(SecretRedactor(), LearningRedactor)
        True
    """

    def add(self, *secrets: Any) -> None:
        """Redact these secrets (``str`` or ``Secret``) too from now on."""
        ...


class _PassThroughStream:
    __slots__ = ()

    def feed(self, text: str) -> str:
        return text

    def flush(self) -> str:
        return ""


class _NoRedaction:
    """The identity redactor."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_REDACTION"

    def redact(self, value: Any) -> Any:
        return value

    def text_stream(self) -> TextStreamRedactor:
        return _PassThroughStream()


NO_REDACTION: Final[Redactor] = _NoRedaction()
"""The redactor that changes nothing: the default where no secrets are configured."""
