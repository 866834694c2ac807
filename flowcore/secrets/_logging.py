"""Log records leave with their secrets replaced: :func:`install_log_redaction`.

A filter on a logger does not see the records its child loggers propagate
to its handlers, so redaction is attached where every record passes: when
the record is made (the record factory) and on every handler.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flowcore.secrets._values import scrub_error

if TYPE_CHECKING:
    from flowcore.secrets._redactor import SecretRedactor

__all__ = ["LogRedaction", "RedactingFilter", "install_log_redaction"]

# Attributes every LogRecord has; anything else came in through ``extra=``.
_STANDARD = frozenset(vars(logging.makeLogRecord({})))


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the message, its arguments, ``extra`` fields and tracebacks.

    The message is formatted with its arguments first (so a secret passed
    as ``%s`` argument is caught), then redacted; the exception of
    ``exc_info`` is scrubbed in place and its formatted traceback redacted.
    Add it to *handlers*: a filter on a logger sees only records logged on
    that very logger, a handler's filter sees every record it writes.
    :func:`install_log_redaction` does that for every handler, present and
    future, and also redacts records as they are made.

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


# Installs and removals rewire process-wide logging hooks: one at a time.
_INSTALL_LOCK = threading.Lock()


class LogRedaction:
    """What :func:`install_log_redaction` set up; :meth:`remove` takes it all away again.

    Made by :func:`install_log_redaction` (building one installs nothing).
    Also a context manager: the redaction lasts for the ``with`` block.
    ``filter`` is the :class:`RedactingFilter` it puts on handlers.

    Example:
        >>> import logging
        >>> from flowcore.secrets import SecretRedactor
        >>> with install_log_redaction(SecretRedactor(["sk-test-0123456789"])) as redaction:
        ...     redaction.active
        True
        >>> redaction.active
        False
    """

    def __init__(self, redactor: SecretRedactor, logger: logging.Logger | None) -> None:
        self.redactor = redactor
        self.filter = RedactingFilter(redactor)
        self._scope = None if logger is None or logger is logging.root else logger.name
        self._handlers: weakref.WeakSet[logging.Handler] = weakref.WeakSet()
        self._active = False
        # What was in place before; read again, under the install lock, by _install.
        self._previous_factory: Callable[..., logging.LogRecord] = logging.getLogRecordFactory()
        self._previous_add_handler: Callable[[logging.Logger, logging.Handler], None]
        self._previous_add_handler = logging.Logger.addHandler

    @property
    def active(self) -> bool:
        """Whether records are still being redacted by this installation.

        Example:
            >>> from flowcore.secrets import SecretRedactor
            >>> redaction = install_log_redaction(SecretRedactor(["sk-test-0123456789"]))
            >>> redaction.remove()
            >>> redaction.active
            False
        """
        return self._active

    def covers(self, logger_name: str) -> bool:
        """Whether records of the logger named ``logger_name`` are redacted.

        Example:
            >>> from flowcore.secrets import SecretRedactor
            >>> with install_log_redaction(SecretRedactor(), logger="app") as redaction:
            ...     [redaction.covers(n) for n in ("app", "app.db", "apple", "httpx")]
            [True, True, False, False]
        """
        scope = self._scope
        return scope is None or logger_name == scope or logger_name.startswith(scope + ".")

    def _install(self) -> None:
        previous_factory = self._previous_factory = logging.getLogRecordFactory()
        previous_add_handler = self._previous_add_handler = logging.Logger.addHandler

        def make_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous_factory(*args, **kwargs)
            # Redacted when made: every handler, wherever and whenever it
            # was attached, only ever sees the cleaned message and traceback.
            if self._active and self.covers(record.name):
                self.filter.filter(record)
            return record

        def add_handler(logger: logging.Logger, handler: logging.Handler) -> None:
            previous_add_handler(logger, handler)
            if self._active and self.covers(logger.name):
                self._attach(handler)

        self._factory = make_record
        self._add_handler = add_handler
        self._active = True
        logging.setLogRecordFactory(make_record)
        setattr(logging.Logger, "addHandler", add_handler)  # noqa: B010 (typed as a method)
        for handler in self._current_handlers():
            self._attach(handler)

    def _current_handlers(self) -> list[logging.Handler]:
        loggers: list[logging.Logger] = [logging.root]
        loggers += [
            each
            for each in list(logging.Logger.manager.loggerDict.values())
            if isinstance(each, logging.Logger)
        ]
        handlers = [h for each in loggers if self.covers(each.name) for h in each.handlers]
        if self._scope is None and logging.lastResort is not None:
            handlers.append(logging.lastResort)
        return handlers

    def _attach(self, handler: logging.Handler) -> None:
        # On the handler, not the logger: a logger's filters never see the
        # records its children propagate up to its handlers. This layer
        # catches ``extra=`` fields (set after the record is made) and
        # records built without the record factory.
        if self.filter not in handler.filters:
            handler.addFilter(self.filter)
        self._handlers.add(handler)

    def remove(self) -> None:
        """Stop redacting: restore the record factory and ``addHandler``, take the filters off.

        Safe to call twice. When other code replaced the record factory or
        ``Logger.addHandler`` after this installation, their replacement
        stays and this installation's hook in the chain just passes through.

        Example:
            >>> from flowcore.secrets import SecretRedactor
            >>> redaction = install_log_redaction(SecretRedactor(["sk-test-0123456789"]))
            >>> redaction.remove(); redaction.remove()
        """
        with _INSTALL_LOCK:
            if not self._active:
                return
            self._active = False
            if logging.getLogRecordFactory() is self._factory:
                logging.setLogRecordFactory(self._previous_factory)
            if logging.Logger.__dict__.get("addHandler") is self._add_handler:
                setattr(logging.Logger, "addHandler", self._previous_add_handler)  # noqa: B010
            for handler in list(self._handlers):
                handler.removeFilter(self.filter)
            self._handlers.clear()

    def __enter__(self) -> LogRedaction:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "active" if self._active else "removed"
        return f"LogRedaction({self._scope or 'all loggers'}, {state}, {self.redactor!r})"


def install_log_redaction(
    redactor: SecretRedactor, logger: logging.Logger | str | None = None
) -> LogRedaction:
    """Redact every log record from now on, whichever logger made it and handler writes it.

    Two hooks, both undone by the returned handle's
    :meth:`~LogRedaction.remove`:

    - a record factory (:func:`logging.setLogRecordFactory`) redacts each
      record as it is made: its message formatted with its arguments, the
      exception of ``exc_info`` (scrubbed in place) and its formatted
      traceback, and ``stack_info``. Records of child loggers such as
      ``httpx``, ``httpcore`` or ``openai``, handlers added later and
      :func:`logging.basicConfig` called later are all covered;
    - a :class:`RedactingFilter` on every handler already attached (to the
      root logger and every other logger) and on every handler attached
      later, which also redacts ``extra=`` fields.

    ``logger`` (a logger or its name) narrows both to that logger and its
    children; by default every logger is covered.

    Example:
        >>> import io, logging
        >>> from flowcore.secrets import SecretRedactor
        >>> out = io.StringIO()
        >>> log = logging.getLogger("flowcore.doctest.install")
        >>> log.propagate = False
        >>> redaction = install_log_redaction(SecretRedactor(["sk-test-0123456789"]))
        >>> handler = logging.StreamHandler(out)  # attached after the install
        >>> log.addHandler(handler)
        >>> log.warning("key %s", "sk-test-0123456789", extra={"auth": "Bearer sk-test-0123456789"})
        >>> out.getvalue(), handler.filters == [redaction.filter]
        ('key [REDACTED]\\n', True)
        >>> redaction.remove()
        >>> log.removeHandler(handler)
    """
    if isinstance(logger, str):
        logger = logging.getLogger(logger)
    redaction = LogRedaction(redactor, logger)
    with _INSTALL_LOCK:
        redaction._install()
    return redaction
