"""``SecretRedactor``: finds every known secret, in every form, and replaces it.

One regular expression holds every form of every secret (see
:func:`~flowcore.secrets._forms.secret_forms`), longest first, so a
secret's JSON-escaped form wins over its plain prefix. The set of secrets
can grow while runs go on (:meth:`SecretRedactor.add`): a new pattern is
built and swapped in whole, so a reader never sees half an update.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from flowcore.secrets._forms import credential_name, secret_forms
from flowcore.secrets._protocol import TextStreamRedactor
from flowcore.secrets._secret import PLACEHOLDER, Secret, SecretError

__all__ = ["DEFAULT_MIN_LENGTH", "SecretRedactor"]

DEFAULT_MIN_LENGTH = 8
"""Shorter values are not treated as secrets: redacting "1234" would redact every 1234."""


@dataclass(frozen=True, slots=True)
class _Patterns:
    """An immutable snapshot of what to look for.

    The bytes pattern is compiled on first use: it costs as much as the text
    one, and most redactors (log records, events, streams) never need it.
    """

    text: re.Pattern[str] | None
    forms: frozenset[str]
    longest: int
    _data: list[re.Pattern[bytes]] = dataclasses.field(default_factory=list)

    def data(self) -> re.Pattern[bytes] | None:
        if not self.forms:
            return None
        if not self._data:
            # Two threads may both compile it: same result, no lock needed.
            latin = {f.encode("utf-8").decode("latin-1") for f in self.forms}
            self._data[:] = [re.compile(_trie_pattern(latin).encode("latin-1"))]
        return self._data[0]


_EMPTY = _Patterns(None, frozenset(), 0)


class SecretRedactor:
    """Redacts known secrets, and their encoded forms, from values, text, streams and logs.

    Secrets are given as strings or :class:`~flowcore.secrets.Secret`
    objects, here, through :meth:`add` or :meth:`from_environment`. Values
    shorter than ``min_length`` are refused (:class:`SecretError`): they
    would match ordinary text. Every form listed by
    :func:`~flowcore.secrets.secret_forms` (base64, URL-encoded,
    JSON-escaped...) is replaced by ``"[REDACTED]"``.

    Example:
        >>> r = SecretRedactor(["sk-test-0123456789"])
        >>> r.redact({"headers": ("Bearer sk-test-0123456789",), "n": 1})
        {'headers': ('Bearer [REDACTED]',), 'n': 1}
        >>> r.redact("c2stdGVzdC0wMTIzNDU2Nzg5 and sk-test-0123456789")
        '[REDACTED] and [REDACTED]'
    """

    def __init__(
        self,
        secrets: Iterable[str | Secret] = (),
        *,
        min_length: int = DEFAULT_MIN_LENGTH,
        placeholder: str = PLACEHOLDER,
    ) -> None:
        if isinstance(min_length, bool) or not isinstance(min_length, int) or min_length < 1:
            raise SecretError(f"min_length must be a whole number >= 1, got {min_length!r}")
        self.min_length = min_length
        self.placeholder = placeholder
        self._lock = threading.Lock()
        self._values: dict[str, str] = {}  # value -> name
        self._patterns = _EMPTY
        if isinstance(secrets, str | Secret):
            secrets = [secrets]
        self.add(*secrets)

    @classmethod
    def from_environment(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        extra: Iterable[str | Secret] = (),
        min_length: int = DEFAULT_MIN_LENGTH,
    ) -> SecretRedactor:
        """A redactor for every variable of ``env`` whose name says it is a credential.

        Names like ``*_KEY``, ``*_TOKEN``, ``*_API_KEY``, ``*SECRET*`` and
        ``*PASSWORD*`` count (see :func:`~flowcore.secrets.credential_name`);
        their values shorter than ``min_length`` are skipped. ``extra`` adds
        values the names do not reveal (and these must be long enough).
        ``env`` defaults to ``os.environ``.

        Example:
            >>> env = {"OPENAI_API_KEY": "sk-live-abcdefgh12", "HOME": "/home/ada", "PIN_KEY": "12"}
            >>> r = SecretRedactor.from_environment(env)
            >>> (r.names(), r.redact("key=sk-live-abcdefgh12 home=/home/ada"))
            (['OPENAI_API_KEY'], 'key=[REDACTED] home=/home/ada')
        """
        source = os.environ if env is None else env
        redactor = cls(min_length=min_length)
        found = [
            Secret(value, name=name)
            for name, value in sorted(source.items())
            if credential_name(name) and isinstance(value, str) and len(value) >= min_length
        ]
        redactor.add(*found, *extra)
        return redactor

    # ---------------------------------------------------------------- secrets
    def add(self, *secrets: str | Secret) -> None:
        """Redact these secrets too, from now on (safe while other threads redact).

        Raises:
            SecretError: A value is not text, is shorter than ``min_length``,
                or is a stand-in read back from storage.

        Example:
            >>> r = SecretRedactor()
            >>> r.add(Secret("tok-0123456789", name="API_TOKEN"))
            >>> r.redact("tok-0123456789")
            '[REDACTED]'
        """
        new: dict[str, str] = {}
        for item in secrets:
            name = item.name if isinstance(item, Secret) else "secret"
            if isinstance(item, Secret):
                if not item.available:
                    raise SecretError(
                        f"secret {name!r} was read back from storage and has no value to redact"
                    )
                value = item.reveal()
            elif isinstance(item, str):
                value = item
            else:
                raise SecretError(
                    f"a secret must be a str or a Secret, got {type(item).__name__}; "
                    "wrap other values as Secret(str(value), name=...)"
                )
            if len(value) < self.min_length:
                raise SecretError(
                    f"secret {name!r} is {len(value)} characters long, shorter than "
                    f"min_length={self.min_length}: redacting it would also hit ordinary "
                    "text; use a longer secret or lower min_length deliberately"
                )
            new[value] = name
        if not new:
            return
        with self._lock:
            if all(v in self._values for v in new):
                return
            values = {**self._values, **{v: n for v, n in new.items() if v not in self._values}}
            self._patterns = _compile(values, self.min_length)
            self._values = values

    def names(self) -> list[str]:
        """The names of the known secrets (never their values), sorted.

        Example:
            >>> SecretRedactor([Secret("x" * 12, name="DB_PASSWORD")]).names()
            ['DB_PASSWORD']
        """
        return sorted(set(self._values.values()))

    def fork(self) -> SecretRedactor:
        """A new redactor knowing the same secrets; what it learns stays its own.

        Example:
            >>> parent = SecretRedactor(["x" * 12])
            >>> child = parent.fork()
            >>> child.add("y" * 12)
            >>> (len(parent), len(child))
            (1, 2)
        """
        child = SecretRedactor(min_length=self.min_length, placeholder=self.placeholder)
        with self._lock:
            child._values = dict(self._values)
            child._patterns = self._patterns
        return child

    def __len__(self) -> int:
        return len(self._values)

    def __bool__(self) -> bool:
        # A redactor that knows nothing yet is still a redactor (it may learn).
        return True

    def __repr__(self) -> str:
        return f"SecretRedactor({len(self._values)} secrets: {', '.join(self.names()) or '-'})"

    # -------------------------------------------------------------- redacting
    def redact_text(self, text: str) -> str:
        """``text`` with every form of every secret replaced (the same object if none).

        Example:
            >>> SecretRedactor(["p@ss/word+1234"]).redact_text("u=p%40ss%2Fword%2B1234")
            'u=[REDACTED]'
        """
        pattern = self._patterns.text
        if pattern is None:
            return text
        cleaned = pattern.sub(self.placeholder, text)
        return text if cleaned == text else cleaned

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with every (UTF-8) form of every secret replaced.

        Example:
            >>> SecretRedactor(["sk-test-0123456789"]).redact_bytes(b"k=sk-test-0123456789")
            b'k=[REDACTED]'
        """
        pattern = self._patterns.data()
        if pattern is None:
            return data
        return pattern.sub(self.placeholder.encode(), data)

    def contains_secret(self, value: Any) -> bool:
        """Whether ``value`` holds a known secret (searched in strings, bytes, containers, errors).

        Example:
            >>> r = SecretRedactor(["sk-test-0123456789"])
            >>> r.contains_secret(["a", {"b": "sk-test-0123456789"}])
            True
        """
        pattern = self._patterns.text
        if pattern is None:
            return False
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if pattern.search(item):
                    return True
            elif isinstance(item, bytes | bytearray):
                if self.redact_bytes(bytes(item)) != item:
                    return True
            elif isinstance(item, Secret):
                continue  # shows nothing
            elif isinstance(item, Mapping):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list | tuple | set | frozenset):
                stack.extend(item)
            elif isinstance(item, BaseException):
                stack.append(f"{item}")
                stack.extend(item.args)
        return False

    def redact(self, value: Any) -> Any:
        """A copy of ``value`` fit to leave the process, with every secret replaced.

        Strings and bytes are redacted; dicts, lists, tuples and sets are
        copied deeply (dict keys redacted too); dataclasses and pydantic
        models become dicts of their fields; a :class:`Secret` becomes
        ``"[REDACTED]"``; an exception becomes ``"<Type>: <message>"``,
        redacted. Numbers, booleans, None and enums are kept. Any other
        object is kept unless its ``str`` holds a secret, in which case it
        becomes that string, redacted.

        Example:
            >>> r = SecretRedactor(["sk-test-0123456789"])
            >>> error = ValueError("bad key sk-test-0123456789")
            >>> r.redact({"key": Secret("sk-test-0123456789"), "error": error})
            {'key': '[REDACTED]', 'error': 'ValueError: bad key [REDACTED]'}
        """
        return self._redact(value, 0)

    def _redact(self, value: Any, depth: int) -> Any:
        if depth > 200:
            return self.placeholder  # a cycle or absurd nesting: refuse to show it
        kind = type(value)
        if kind is str:
            return self.redact_text(value)
        if value is None or kind in (int, float, bool) or isinstance(value, enum.Enum):
            return value
        if isinstance(value, Secret):
            return self.placeholder
        if isinstance(value, str):
            return self.redact_text(str(value))
        if isinstance(value, bytes | bytearray):
            return kind(self.redact_bytes(bytes(value)))
        if isinstance(value, BaseException):
            return self.redact_text(f"{type(value).__name__}: {value}")
        deeper = depth + 1
        if isinstance(value, Mapping):
            return {self._redact(k, deeper): self._redact(v, deeper) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redact(v, deeper) for v in value]
        if isinstance(value, tuple):
            return tuple(self._redact(v, deeper) for v in value)
        if isinstance(value, set | frozenset):
            return kind(self._redact(v, deeper) for v in value)
        if isinstance(value, BaseModel):
            return self._redact(value.model_dump(mode="python"), deeper)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
            return self._redact(fields, deeper)
        try:
            shown = str(value)
        except Exception:
            return value
        cleaned = self.redact_text(shown)
        return value if cleaned == shown else cleaned

    def text_stream(self) -> TextStreamRedactor:
        """A redactor for one text arriving in pieces; see :class:`SecretTextStream`.

        Example:
            >>> stream = SecretRedactor(["sk-test-0123456789"]).text_stream()
            >>> stream.feed("key: sk-test-01") + stream.feed("23456789 ok") + stream.flush()
            'key: [REDACTED] ok'
        """
        return SecretTextStream(self)

    def logging_filter(self) -> Any:
        """A :class:`logging.Filter` redacting every record it sees; add it to your handlers.

        To redact every log of the process, present and future handlers
        alike, call :func:`~flowcore.secrets.install_log_redaction` instead.

        Example:
            >>> import logging
            >>> handler = logging.StreamHandler()
            >>> handler.addFilter(SecretRedactor(["sk-test-0123456789"]).logging_filter())
        """
        from flowcore.secrets._logging import RedactingFilter

        return RedactingFilter(self)


class SecretTextStream:
    """Redacts one text arriving in pieces, holding back just enough to catch split secrets.

    ``feed`` returns everything that can no longer be the start of a secret:
    all but the last ``longest form - 1`` characters, redacted. ``flush``
    returns the rest. A secret split over two, or many, pieces is therefore
    replaced whole, never sent half.

    Example:
        >>> stream = SecretRedactor(["sk-test-0123456789"]).text_stream()
        >>> sent = [stream.feed(p) for p in ("Your key is sk-", "test-0123", "456789.")]
        >>> sent.append(stream.flush())
        >>> ("".join(sent), any("sk-" in piece for piece in sent))
        ('Your key is [REDACTED].', False)
    """

    __slots__ = ("_buffer", "_flushed", "_redactor")

    def __init__(self, redactor: SecretRedactor) -> None:
        self._redactor = redactor
        self._buffer = ""
        self._flushed = False

    def feed(self, text: str) -> str:
        """Take the next piece; return what is safe to send now (may be ``""``).

        Example:
            >>> SecretRedactor().text_stream().feed("nothing to hide")
            'nothing to hide'
        """
        if self._flushed:
            raise SecretError("this text stream was flushed; start a new one with text_stream()")
        self._buffer += text
        patterns = self._redactor._patterns
        if patterns.text is None:
            everything, self._buffer = self._buffer, ""
            return everything
        # Positions before `cut` have at least `longest` characters after
        # them, so whatever secret starts there is entirely in the buffer.
        cut = len(self._buffer) - (patterns.longest - 1)
        if cut <= 0:
            return ""
        out: list[str] = []
        pos = 0
        for match in patterns.text.finditer(self._buffer):
            if match.start() >= cut:
                break
            out.append(self._buffer[pos : match.start()])
            out.append(self._redactor.placeholder)
            pos = match.end()
        keep_from = max(pos, cut)
        out.append(self._buffer[pos:keep_from])
        self._buffer = self._buffer[keep_from:]
        return "".join(out)

    def flush(self) -> str:
        """The held-back rest, redacted; the stream is finished afterwards.

        Example:
            >>> stream = SecretRedactor(["sk-test-0123456789"]).text_stream()
            >>> stream.feed("ok sk-test-0123456789"), stream.flush()
            ('', 'ok [REDACTED]')
        """
        self._flushed = True
        rest, self._buffer = self._buffer, ""
        return self._redactor.redact_text(rest)


def _compile(values: Mapping[str, str], min_length: int) -> _Patterns:
    forms: set[str] = set()
    for value in values:
        forms |= {f for f in secret_forms(value) if len(f) >= min_length}
        forms.add(value)
    text = re.compile(_trie_pattern(forms))
    return _Patterns(text, frozenset(forms), max(len(f) for f in forms))


def _trie_pattern(words: Iterable[str]) -> str:
    """One regular expression matching any of ``words``, the longest at each position.

    The words share their prefixes in a trie, so the engine decides on one
    character at a time instead of trying every word at every position.
    """
    end = ""  # a key no character can be
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[end] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # Optional when a word ends here: greedy, so the longer word wins.
        if end in node:
            return body + "?" if len(branches) == 1 and len(body) == 1 else f"(?:{body})?"
        return body

    return emit(root)
