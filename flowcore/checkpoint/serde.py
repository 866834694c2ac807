"""How checkpointed values become bytes and back: JSON, with a few tagged types.

Plain JSON types pass through. A small set of other types is written as a
tagged object ``{"__fc__": tag, "v": ...}`` and restored to the same type;
anything else raises :class:`~flowcore.errors.SerializationError` naming
where the value sits. Nothing is ever pickled, and loading only ever imports
pydantic model and enum classes named in the data.

Secrets are never written. A :class:`~flowcore.secrets.Secret` is stored as
a placeholder, ``{"__fc__": "secret", "v": <its name>}``, which loads back
as ``Secret.unavailable(name)``: a stand-in whose ``reveal()`` raises
:class:`~flowcore.secrets.SecretUnavailableError`. A placeholder rather than
a refusal, because a refusal would fail the run at its next checkpoint,
after side effects had already happened (a paid model call, a placed
order), and would make a ``Secret`` unusable in any checkpointed graph;
the placeholder keeps the checkpoint whole and loadable, and the stand-in
says what is missing and how to give it back. With ``redactor=``, every
string and bytes value is also scrubbed of the secrets that redactor knows
(their encoded forms included) before it is encoded, so no store that uses
the serializer (checkpoints, run history) writes one to disk.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import enum
import importlib
import json
import math
import pathlib
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel

from flowcore.errors import SerializationError
from flowcore.secrets import Redactor, Secret, scrub

__all__ = ["JsonSerializer", "Serializer"]

_TAG = "__fc__"


class Serializer(Protocol):
    """Turns stored values into bytes and back.

    Example:
        >>> s: Serializer = JsonSerializer()
        >>> s.loads(s.dumps({"a": 1}))
        {'a': 1}
    """

    def dumps(self, value: Any, *, path: str = "") -> bytes:
        """Encode ``value``; ``path`` names it in error messages."""
        ...

    def loads(self, data: bytes) -> Any:
        """Decode what :meth:`dumps` produced."""
        ...


class JsonSerializer:
    """The default serializer: JSON plus tagged tuples, sets, bytes, dates, models.

    ``redactor`` (optional) scrubs every secret it knows from the values
    before they are encoded (see the module docstring).

    Example:
        >>> s = JsonSerializer()
        >>> s.loads(s.dumps({"pair": (1, 2), "tags": {"b", "a"}}))
        {'pair': (1, 2), 'tags': {'a', 'b'}}
        >>> s.loads(s.dumps({"key": Secret("sk-test-0123456789", name="API_KEY")}))
        {'key': Secret('API_KEY', unavailable)}
    """

    def __init__(self, *, redactor: Redactor | None = None) -> None:
        self.redactor = redactor

    def dumps(self, value: Any, *, path: str = "") -> bytes:
        """Encode ``value`` as compact UTF-8 JSON.

        Example:
            >>> JsonSerializer().dumps([1, "a"])
            b'[1,"a"]'
        """
        if self.redactor is not None:
            value = scrub(value, self.redactor)
        if _is_plain_json(value):
            # Nothing to tag: the JSON encoder can take the value as it is.
            return _to_json(value).encode()
        try:
            encoded = _encode_fast(value)
        except SerializationError:
            # Encode again with paths, only to say exactly where the bad value is.
            encoded = _encode(value, path or "value")
        return _to_json(encoded).encode()

    def loads(self, data: bytes) -> Any:
        """Decode bytes written by :meth:`dumps`.

        Example:
            >>> JsonSerializer().loads(b'[1,"a"]')
            [1, 'a']
        """
        try:
            raw = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SerializationError(f"stored data is not valid JSON: {exc}") from None
        return _decode(raw)


def _unsupported(value: Any, path: str, why: str = "") -> SerializationError:
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    return SerializationError(
        f"cannot store {path}: a {kind} {why or 'is not a type flowcore can store'}; keep "
        "state to JSON types, tuples, sets, bytes, dates, UUIDs, Decimals, paths, enums "
        "and module-level pydantic models, or convert it before returning it from the node",
        path=path,
    )


def _class_ref(cls: type, value: Any, path: str) -> str:
    if "<locals>" in cls.__qualname__:
        raise _unsupported(value, path, "is defined inside a function, so it cannot be imported")
    return f"{cls.__module__}:{cls.__qualname__}"


_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _make_encoder() -> Callable[[Any], str]:
    """``_JSON.encode``, with the C encoder built once instead of on every call.

    ``JSONEncoder.encode`` makes a new C encoder per call, which is a
    noticeable share of encoding one small checkpoint record. No circular
    reference check: every value is walked by :func:`_is_plain_json` or
    rebuilt by :func:`_encode_fast` first, and both end on a cycle.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # a Python without the C accelerator
        return _JSON.encode
    c_encode = make(
        None, _not_json, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )

    def encode(value: Any) -> str:
        return "".join(c_encode(value, 0))

    return encode


_to_json = _make_encoder()


def _is_plain_json(value: Any) -> bool:
    """True if ``value`` is made only of types JSON writes and reads back unchanged.

    Exact types only: a subclass (an enum, an ``OrderedDict``) needs a tag,
    and so do tuples, non-finite floats and dicts with a key that is not a
    string or that looks like a tag.
    """
    kind = type(value)
    if kind is str or kind is int or value is None or kind is bool:
        return True
    if kind is dict:
        if _TAG in value:
            return False
        # Plain loops, not all(): no generator per container on this hot path.
        for k, v in value.items():  # noqa: SIM110
            if type(k) is not str or not _is_plain_json(v):
                return False
        return True
    if kind is list:
        for v in value:  # noqa: SIM110
            if not _is_plain_json(v):
                return False
        return True
    if kind is float:
        return math.isfinite(value)
    return False


def _encode_fast(value: Any) -> Any:
    """:func:`_encode` without building error paths: the common case, JSON-native values.

    Anything unusual goes through :func:`_encode`; a failure anywhere is
    retried by the caller with paths, so error messages are unchanged.
    """
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:
        return value
    if kind is list:
        return [_encode_fast(v) for v in value]
    if kind is dict and _TAG not in value:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                return _encode(value, "value")
            out[k] = _encode_fast(v)
        return out
    if kind is tuple:
        return {_TAG: "tuple", "v": [_encode_fast(v) for v in value]}
    return _encode(value, "value")


def _encode(value: Any, path: str) -> Any:
    # Exact type checks first: bool/int/str subclasses (enums!) need their tags.
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        return {_TAG: "float", "v": repr(value)}
    if kind is list:
        return [_encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind is dict:
        if _TAG not in value and all(type(k) is str for k in value):
            return {k: _encode(v, f"{path}.{k}") for k, v in value.items()}
        pairs = [
            [_encode(k, f"{path}<key>"), _encode(v, f"{path}[{k!r}]")] for k, v in value.items()
        ]
        return {_TAG: "dict", "v": pairs}
    if kind is tuple:
        return {_TAG: "tuple", "v": [_encode(v, f"{path}[{i}]") for i, v in enumerate(value)]}
    if kind in (set, frozenset):
        items = [_encode(v, f"{path}<item>") for v in value]
        # Sorted by their JSON text, so equal sets always give equal bytes.
        items.sort(key=lambda item: json.dumps(item, sort_keys=True))
        return {_TAG: "set" if kind is set else "frozenset", "v": items}
    if isinstance(value, Secret):
        return {_TAG: "secret", "v": value.name}  # the value is never written
    if isinstance(value, enum.Enum):
        return {
            _TAG: "enum",
            "cls": _class_ref(kind, value, path),
            "v": _encode(value.value, f"{path}.value"),
        }
    if isinstance(value, BaseModel):
        return {
            _TAG: "model",
            "cls": _class_ref(kind, value, path),
            "v": _encode(value.model_dump(mode="python"), path),
        }
    if kind in (bytes, bytearray):
        return {_TAG: kind.__name__, "v": base64.b64encode(value).decode("ascii")}
    if kind is dt.datetime:
        return {_TAG: "datetime", "v": value.isoformat()}
    if kind is dt.date:
        return {_TAG: "date", "v": value.isoformat()}
    if kind is dt.time:
        return {_TAG: "time", "v": value.isoformat()}
    if kind is dt.timedelta:
        return {_TAG: "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if kind is decimal.Decimal:
        return {_TAG: "decimal", "v": str(value)}
    if kind is uuid.UUID:
        return {_TAG: "uuid", "v": str(value)}
    if isinstance(value, pathlib.PurePath):
        return {_TAG: "path", "v": str(value)}
    raise _unsupported(value, path)


def _import_class(ref: Any, base: type) -> type:
    if not isinstance(ref, str) or ":" not in ref:
        raise SerializationError(f"stored class reference {ref!r} is malformed")
    module_name, qualname = ref.split(":", 1)
    try:
        target: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise SerializationError(
            f"stored value names class {ref}, which cannot be imported: {exc}"
        ) from None
    # Only ever a model or enum class: never call an arbitrary object named in data.
    if not (isinstance(target, type) and issubclass(target, base)):
        raise SerializationError(
            f"stored value names {ref}, which is not a {base.__name__} subclass; refusing it"
        )
    return target


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    tag = value.get(_TAG)
    if tag is None:
        return {k: _decode(v) for k, v in value.items()}
    try:
        return _decode_tagged(tag, value)
    except SerializationError:
        raise
    except (KeyError, TypeError, ValueError, decimal.InvalidOperation) as exc:
        raise SerializationError(f"stored {tag!r} value is malformed: {exc}") from None


def _decode_tagged(tag: Any, value: dict[str, Any]) -> Any:
    v = value["v"]
    if tag == "tuple":
        return tuple(_decode(x) for x in v)
    if tag == "dict":
        return {_decode(k): _decode(x) for k, x in v}
    if tag == "set":
        return {_decode(x) for x in v}
    if tag == "frozenset":
        return frozenset(_decode(x) for x in v)
    if tag == "float":
        return float(v)
    if tag in ("bytes", "bytearray"):
        raw = base64.b64decode(v.encode("ascii"), validate=True)
        return raw if tag == "bytes" else bytearray(raw)
    if tag == "datetime":
        return dt.datetime.fromisoformat(v)
    if tag == "date":
        return dt.date.fromisoformat(v)
    if tag == "time":
        return dt.time.fromisoformat(v)
    if tag == "timedelta":
        days, seconds, micros = v
        return dt.timedelta(days=days, seconds=seconds, microseconds=micros)
    if tag == "decimal":
        return decimal.Decimal(v)
    if tag == "uuid":
        return uuid.UUID(v)
    if tag == "path":
        return pathlib.Path(v)
    if tag == "secret":
        return Secret.unavailable(str(v))
    if tag == "enum":
        return _import_class(value["cls"], enum.Enum)(_decode(v))
    if tag == "model":
        model: Any = _import_class(value["cls"], BaseModel)
        return model.model_validate(_decode(v))
    raise SerializationError(f"unknown stored type tag {tag!r}")
