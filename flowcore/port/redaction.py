"""The redaction seam of the port: what an executor needs from a secrets redactor.

The port applies a :class:`Redactor` to every field of an event that carries
data (tool arguments and results, interrupt values, error messages, the
final output) and runs the text deltas of one model call through one
:class:`TextStreamRedactor`, so a secret split across two deltas never leaves
in pieces. :data:`NO_REDACTION` is the identity, used when nothing is
configured. ``flowcore.secrets.SecretRedactor`` implements the protocol.
"""

from __future__ import annotations

from typing import Any, Final, Protocol, runtime_checkable

__all__ = ["NO_REDACTION", "Redactor", "TextStreamRedactor"]


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
