"""``RedactingFilter``: log records leave with their secrets replaced."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from flowcore.secrets._values import scrub_error

if TYPE_CHECKING:
    from flowcore.secrets._redactor import SecretRedactor

__all__ = ["RedactingFilter"]

# Attributes every LogRecord has; anything else came in through ``extra=``.
_STANDARD = frozenset(vars(logging.makeLogRecord({})))


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the message, its arguments, ``extra`` fields and tracebacks.

    The message is formatted with its arguments first (so a secret passed
    as ``%s`` argument is caught), then redacted; the exception of
    ``exc_info`` is scrubbed in place and its formatted traceback redacted.
    Add it to *handlers*: a filter on a logger sees only records logged on
    that very logger, a handler's filter sees every record it writes.

    Example:
        >>> import io, logging
        >>> from flowcore.secrets import SecretRedactor
        >>> out = io.StringIO()
        >>> handler = logging.StreamHandler(out)
        >>> handler.addFilter(RedactingFilter(SecretRedactor(["sk-test-0123456789"])))
        >>> log = logging.getLogger("flowcore.doctest.redacting")
        >>> log.addHandler(handler)
        >>> log.warning("calling with key %s", "sk-test-0123456789")
        >>> out.getvalue()
        'calling with key [REDACTED]\\n'
        >>> log.removeHandler(handler)
    """

    def __init__(self, redactor: SecretRedactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place; always keep it.

        Example:
            >>> from flowcore.secrets import SecretRedactor
            >>> record = logging.makeLogRecord({"msg": "key %s", "args": ("sk-test-0123456789",)})
            >>> RedactingFilter(SecretRedactor(["sk-test-0123456789"])).filter(record)
            True
            >>> record.getMessage()
            'key [REDACTED]'
        """
        redact = self.redactor.redact_text
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: show it, redacted, as logging would
            message = str(record.msg)
        record.msg = redact(message)
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            scrub_error(record.exc_info[1], self.redactor)
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text)
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        for name, value in list(vars(record).items()):
            if name not in _STANDARD and name != "message":
                setattr(record, name, self.redactor.redact(value))
        return True
