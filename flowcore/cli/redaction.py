"""The CLI keeps secrets off the terminal: every byte it prints passes a redactor.

``flowcore`` builds a :class:`~flowcore.secrets.SecretRedactor` from the
environment (``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``, ...) when it starts.
:func:`redacted_output` then routes everything the command prints through
it: the command's own output and error streams, ``sys.stdout`` and
``sys.stderr`` (so warnings and stray prints are covered), and every log
record, through :func:`~flowcore.secrets.install_log_redaction`: records of
any logger (``httpx``, ``openai``, ...) and handlers attached after the
command started included. The same redactor goes to the engine, the run history and the
checkpoint store, so what is stored is clean as well.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from flowcore.secrets import SecretRedactor, install_log_redaction

__all__ = ["RedactingWriter", "redacted_output"]


class RedactingWriter:
    """A text stream that redacts each ``write`` before passing it on.

    Every CLI write is a whole line or more, so each one is redacted as a
    whole: no tail is held back, and progress lines appear at once.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> writer = RedactingWriter(out, SecretRedactor(["sk-test-0123456789"]))
        >>> writer.write("k=sk-test-0123456789")
        20
        >>> out.getvalue()
        'k=[REDACTED]'
    """

    def __init__(self, stream: TextIO, redactor: SecretRedactor) -> None:
        self.stream = stream
        self.redactor = redactor

    def write(self, text: str) -> int:
        """Write ``text`` with every secret replaced; returns ``len(text)`` as streams do.

        Example:
            >>> import io
            >>> RedactingWriter(io.StringIO(), SecretRedactor()).write("hello")
            5
        """
        self.stream.write(self.redactor.redact_text(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        """Write each line, redacted.

        Example:
            >>> import io
            >>> RedactingWriter(io.StringIO(), SecretRedactor()).writelines(["a", "b"])
        """
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Flush the underlying stream.

        Example:
            >>> import io
            >>> RedactingWriter(io.StringIO(), SecretRedactor()).flush()
        """
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextmanager
def redacted_output(
    redactor: SecretRedactor, out: TextIO, err: TextIO
) -> Iterator[tuple[TextIO, TextIO]]:
    """Redact everything printed while the block runs; yields the redacting ``(out, err)``.

    Example:
        >>> import io
        >>> out, err = io.StringIO(), io.StringIO()
        >>> with redacted_output(SecretRedactor(["sk-test-0123456789"]), out, err) as (o, e):
        ...     _ = o.write("key sk-test-0123456789")
        >>> out.getvalue()
        'key [REDACTED]'
    """
    safe_out: Any = RedactingWriter(out, redactor)
    safe_err: Any = RedactingWriter(err, redactor)
    saved = sys.stdout, sys.stderr
    # Stray prints, warnings and argparse's usage errors go to the command's own streams
    # (the terminal's, unless main() was given others), redacted like the rest.
    sys.stdout, sys.stderr = safe_out, safe_err
    redaction = install_log_redaction(redactor)
    try:
        yield safe_out, safe_err
    finally:
        redaction.remove()
        sys.stdout, sys.stderr = saved
