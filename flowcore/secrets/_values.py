"""Working with secrets inside values: scrubbing state and errors, revealing, learning.

:func:`scrub` is the type-preserving cousin of ``Redactor.redact``: it
rewrites only the strings that hold a secret and rebuilds only the
containers above them, so a tuple stays a tuple and a pydantic model stays
that model. The engine uses it on what enters state. :func:`scrub_error`
rewrites an exception's message (and its cause chain) in place.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from flowcore.errors import FlowcoreError
from flowcore.secrets._protocol import NO_REDACTION, LearningRedactor, Redactor
from flowcore.secrets._secret import PLACEHOLDER, Secret, SecretError

__all__ = [
    "RedactedError",
    "conceal_secrets",
    "find_secrets",
    "learn",
    "reveal_secrets",
    "scrub",
    "scrub_error",
]


class RedactedError(FlowcoreError):
    """Stands in for an error whose message held a secret and could not be rewritten in place.

    ``original_type`` names the class of the error it replaces; the message
    is that error's message with every secret redacted.

    Example:
        >>> err = RedactedError("ValidationError", "token: bad value '[REDACTED]'")
        >>> (err.original_type, str(err))
        ('ValidationError', "ValidationError: token: bad value '[REDACTED]'")
    """

    code = "redacted-error"

    def __init__(self, original_type: str, message: str) -> None:
        self.original_type = original_type
        super().__init__(f"{original_type}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        message = str(self).split(": ", 1)[-1]
        return (type(self), (self.original_type, message))


def _text(redactor: Redactor, text: str) -> str:
    cleaned = redactor.redact(text)
    return text if cleaned == text else str(cleaned)


def scrub(value: Any, redactor: Redactor) -> Any:
    """``value`` with every secret redacted, keeping its types; unchanged parts are shared.

    Strings (also dict keys) and bytes are redacted; dicts, lists, tuples,
    sets, pydantic models and dataclasses are rebuilt, as the same type, only
    where something inside changed; exceptions are scrubbed in place (see
    :func:`scrub_error`); :class:`Secret` objects stay as they are, since
    they never show their value. Other objects are returned as they are.

    Example:
        >>> from flowcore.secrets import SecretRedactor
        >>> r = SecretRedactor(["hunter2-hunter2"])
        >>> scrub({"log": ("login with hunter2-hunter2", 3)}, r)
        {'log': ('login with [REDACTED]', 3)}
    """
    if redactor is NO_REDACTION:
        return value
    return _Scrubber(redactor).value(value)


def scrub_error(error: BaseException, redactor: Redactor) -> BaseException:
    """Redact secrets from ``error`` in place: its args, attributes, notes and cause chain.

    Returns ``error`` itself, or a :class:`RedactedError` standing in for it
    when its message is computed from data that cannot be rewritten (a
    pydantic ``ValidationError``, for instance). Causes and contexts that
    cannot be rewritten are replaced in the chain the same way.

    Example:
        >>> from flowcore.secrets import SecretRedactor
        >>> err = ValueError("login failed for hunter2-hunter2")
        >>> str(scrub_error(err, SecretRedactor(["hunter2-hunter2"])))
        'login failed for [REDACTED]'
    """
    if redactor is NO_REDACTION:
        return error
    return _Scrubber(redactor).error(error)


class _Scrubber:
    """One scrub: remembers what it did, so shared and cyclic parts are handled once."""

    __slots__ = ("done", "redactor")

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.done: dict[int, Any] = {}

    def value(self, value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return _text(self.redactor, value)
        if value is None or kind in (int, float, bool) or isinstance(value, Secret | enum.Enum):
            return value
        if isinstance(value, BaseException):
            return self.error(value)
        if isinstance(value, str):
            cleaned = _text(self.redactor, str(value))
            return value if cleaned == str(value) else cleaned
        if isinstance(value, bytes | bytearray):
            cleaned_bytes = self.redactor.redact(bytes(value))
            return value if cleaned_bytes == value else kind(cleaned_bytes)
        key = id(value)
        if key in self.done:
            return self.done[key]
        self.done[key] = value  # a cycle back here keeps the original
        result = self._container(value)
        self.done[key] = result
        return result

    def _container(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            pairs = [(self.value(k), self.value(v)) for k, v in value.items()]
            if all(
                nk is k and nv is v for (nk, nv), (k, v) in zip(pairs, value.items(), strict=True)
            ):
                return value
            if type(value) is dict:
                return dict(pairs)
            try:
                rebuilt: Any = type(value)(pairs)  # type: ignore[call-arg]
            except TypeError:
                return dict(pairs)
            return rebuilt
        if isinstance(value, list | tuple | set | frozenset):
            items = [self.value(v) for v in value]
            if all(n is o for n, o in zip(items, value, strict=True)):
                return value
            if isinstance(value, tuple) and hasattr(value, "_make"):
                return value._make(items)  # a namedtuple
            try:
                return type(value)(items)
            except TypeError:
                return list(items)
        if isinstance(value, BaseModel):
            changes = {}
            for name in type(value).model_fields:
                old = getattr(value, name, None)
                new = self.value(old)
                if new is not old:
                    changes[name] = new
            return value.model_copy(update=changes) if changes else value
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._dataclass(value)
        return value

    def _dataclass(self, value: Any) -> Any:
        changes = {}
        for f in dataclasses.fields(value):
            old = getattr(value, f.name, None)
            new = self.value(old)
            if new is not old:
                changes[f.name] = new
        if not changes:
            return value
        try:
            return dataclasses.replace(value, **changes)
        except (TypeError, ValueError):
            clone = copy.copy(value)
            for name, new in changes.items():
                object.__setattr__(clone, name, new)
            return clone

    def error(self, error: BaseException) -> BaseException:
        key = id(error)
        if key in self.done:
            result: BaseException = self.done[key]
            return result
        self.done[key] = error
        self._rewrite(error)
        result = error
        if self._leaks(error):
            message = _text(self.redactor, _safe_str(error))
            result = RedactedError(type(error).__name__, message)
        self.done[key] = result
        return result

    def _rewrite(self, error: BaseException) -> None:
        args = tuple(self.value(a) for a in error.args)
        if any(n is not o for n, o in zip(args, error.args, strict=True)):
            with contextlib.suppress(AttributeError, TypeError):
                error.args = args
        attributes = getattr(error, "__dict__", None)
        if isinstance(attributes, dict):
            for name, old in list(attributes.items()):
                new = self.value(old)
                if new is not old:
                    try:
                        setattr(error, name, new)
                    except (AttributeError, TypeError):
                        attributes[name] = new
        for link in ("__cause__", "__context__"):
            linked = getattr(error, link)
            if linked is not None:
                replacement = self.error(linked)
                if replacement is not linked:
                    setattr(error, link, replacement)
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                self.error(inner)

    def _leaks(self, error: BaseException) -> bool:
        for text in (_safe_str(error), _safe_repr(error)):
            if _text(self.redactor, text) != text:
                return True
        return False


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # pragma: no cover - a broken __str__
        return type(error).__name__


def _safe_repr(error: BaseException) -> str:
    try:
        return repr(error)
    except Exception:  # pragma: no cover - a broken __repr__
        return type(error).__name__


def reveal_secrets(value: Any) -> Any:
    """``value`` with every :class:`Secret` replaced by its value (dicts, lists, tuples).

    For the moment a secret is used: rendering a prompt, calling a tool.
    Unchanged parts are shared, not copied.

    Example:
        >>> reveal_secrets({"token": Secret("s3cr3t-value"), "n": [1]})
        {'token': 's3cr3t-value', 'n': [1]}
    """
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, Mapping):
        pairs = {k: reveal_secrets(v) for k, v in value.items()}
        changed = any(pairs[k] is not v for k, v in value.items())
        return pairs if changed else value
    if isinstance(value, list | tuple):
        items = [reveal_secrets(v) for v in value]
        if all(n is o for n, o in zip(items, value, strict=True)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


def conceal_secrets(value: Any) -> Any:
    """``value`` with every :class:`Secret` replaced by ``"[REDACTED]"`` (dicts, lists, tuples).

    For values on their way to a store that knows nothing of secrets.

    Example:
        >>> conceal_secrets({"token": Secret("s3cr3t-value"), "n": (1,)})
        {'token': '[REDACTED]', 'n': (1,)}
    """
    if isinstance(value, Secret):
        return PLACEHOLDER
    if isinstance(value, Mapping):
        pairs = {k: conceal_secrets(v) for k, v in value.items()}
        changed = any(pairs[k] is not v for k, v in value.items())
        return pairs if changed else value
    if isinstance(value, list | tuple):
        items = [conceal_secrets(v) for v in value]
        if all(n is o for n, o in zip(items, value, strict=True)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


def find_secrets(value: Any) -> list[Secret]:
    """Every :class:`Secret` inside ``value`` (dicts, lists, tuples, sets), in order.

    Example:
        >>> [s.name for s in find_secrets({"a": [Secret("x" * 8, name="k")]})]
        ['k']
    """
    found: list[Secret] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Secret):
            found.append(item)
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(reversed(list(item)))
    return found


def learn(redactor: Redactor, value: Any, *, name: str = "secret") -> int:
    """Tell ``redactor`` the secrets in ``value`` (its strings and ``Secret`` s), if it learns.

    Values too short to redact safely are skipped (see
    :class:`~flowcore.secrets.SecretRedactor`'s ``min_length``), as are
    stand-ins read back from storage. Returns how many were added.

    Example:
        >>> from flowcore.secrets import SecretRedactor
        >>> r = SecretRedactor()
        >>> learn(r, {"token": "tok-0123456789"}, name="token")
        1
        >>> r.redact("use tok-0123456789")
        'use [REDACTED]'
    """
    if not isinstance(redactor, LearningRedactor):
        return 0
    candidates: list[Secret] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Secret):
            if item.available:
                candidates.append(item)
        elif isinstance(item, str):
            candidates.append(Secret(item, name=name))
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
    added = 0
    for secret in candidates:
        try:
            redactor.add(secret)
        except SecretError:
            continue
        added += 1
    return added
