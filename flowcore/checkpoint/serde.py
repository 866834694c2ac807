"""How checkpointed values become bytes and back: JSON, with a few tagged types.

Plain JSON types pass through. A small set of other types is written as a
tagged object ``{"__fc__": tag, "v": ...}`` and restored to the same type;
anything else raises :class:`~flowcore.errors.SerializationError` naming
where the value sits. Nothing is ever pickled, and loading only ever imports
pydantic model, dataclass and enum classes named in the data.

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

Values made only of plain JSON types skip the tagging pass
(:mod:`~flowcore.checkpoint.plain_json`); the checks of a value that is
not encoded, and the errors both raise, are in
:mod:`~flowcore.checkpoint.value_checks` (re-exported here).
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
from typing import Any, Protocol

from pydantic import BaseModel

from flowcore._shown import shown
from flowcore.checkpoint.dataclass_values import (
    dataclass_fields,
    is_dataclass_class,
    is_dataclass_value,
    rebuild_dataclass,
)
from flowcore.checkpoint.plain_json import TAG as _TAG
from flowcore.checkpoint.plain_json import is_plain_json as _is_plain_json
from flowcore.checkpoint.plain_json import to_json as _to_json
from flowcore.checkpoint.value_checks import (
    _LIMIT,
    _WRAPPING,
    MAX_NESTING,
    _too_deep,
    _unwritable,
    check_json_value,
    check_text_and_nesting,
)
from flowcore.errors import SerializationError
from flowcore.secrets import Redactor, Secret, scrub

__all__ = [
    "MAX_NESTING",
    "JsonSerializer",
    "Serializer",
    "check_json_value",
    "check_storable",
    "check_text_and_nesting",
]


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
        return _dump(value, path, 0)

    def dumps_nested(self, value: Any, depth: int, *, path: str = "") -> bytes:
        """Encode ``value`` as :meth:`dumps` writes it ``depth`` containers deep in a record.

        The bytes are what ``dumps`` writes for that part of the record, so
        they can be spliced into it; the nesting limit counts from ``depth``.

        Example:
            >>> JsonSerializer().dumps_nested({"a": 1}, 3)
            b'{"a":1}'
        """
        if depth < 0:
            raise ValueError(f"depth must be 0 or more, not {depth}")
        if self.redactor is not None:
            value = scrub(value, self.redactor)
        return _dump(value, path, depth)

    def loads(self, data: bytes) -> Any:
        """Decode bytes written by :meth:`dumps`.

        Example:
            >>> JsonSerializer().loads(b'[1,"a"]')
            [1, 'a']
        """
        try:
            return _decode(json.loads(data))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SerializationError(f"stored data is not valid JSON: {exc}") from None
        except RecursionError:
            # Never written by dumps (it refuses such depth): the bytes came from elsewhere.
            raise SerializationError(
                f"stored data nests deeper than flowcore can read (more than {MAX_NESTING} "
                "levels were never written by it); the store holds foreign or damaged data"
            ) from None


def check_storable(value: Any, *, path: str = "value") -> None:
    """Raise :class:`~flowcore.errors.SerializationError` if ``value`` cannot be stored.

    The same check :meth:`JsonSerializer.dumps` makes, without keeping the
    bytes: a type the serializer does not know, nesting deeper than
    :data:`MAX_NESTING`, a string with a lone surrogate, an int too long to
    write as text. The error's ``path`` says where the value sits.

    Example:
        >>> check_storable({"ok": [1, "two"]})
        >>> try:
        ...     check_storable({"name": "\\ud800"}, path="input")
        ... except SerializationError as exc:
        ...     exc.path
        'input.name'
    """
    _dump(value, path, _WRAPPING)


def _dump(value: Any, path: str, depth: int) -> bytes:
    """Encode ``value`` as if it sat ``depth`` containers deep already."""
    try:
        # Plain JSON needs no tags: the JSON encoder can take the value as it is.
        encoded = value if _is_plain_json(value, depth) else _encode_fast(value, depth)
    except SerializationError:
        # Encode again with paths, only to say exactly where the bad value is.
        encoded = _encode(value, path or "value", depth)
    try:
        return _to_json(encoded).encode()
    except (UnicodeEncodeError, ValueError) as exc:
        # A lone surrogate, or an int too long to write as text: find which.
        raise _unwritable(encoded, path or "value") from exc


def _unsupported(value: Any, path: str, why: str = "") -> SerializationError:
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    return SerializationError(
        f"cannot store {path}: a {kind} {why or 'is not a type flowcore can store'}; keep "
        "state to JSON types, tuples, sets, bytes, dates, UUIDs, Decimals, paths, enums "
        "and module-level pydantic models and dataclasses, or convert it before returning "
        "it from the node",
        path=path,
    )


def _class_ref(cls: type, value: Any, path: str) -> str:
    if "<locals>" in cls.__qualname__:
        raise _unsupported(value, path, "is defined inside a function, so it cannot be imported")
    return f"{cls.__module__}:{cls.__qualname__}"


def _encode_fast(value: Any, depth: int) -> Any:
    """:func:`_encode` without building error paths: the common case, JSON-native values.

    Anything unusual goes through :func:`_encode`; a failure anywhere is
    retried by the caller with paths, so error messages are unchanged.
    """
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:
        return value
    if depth >= _LIMIT:
        return _encode(value, "value", depth)
    depth += 1
    if kind is list:
        return [_encode_fast(v, depth) for v in value]
    if kind is dict and _TAG not in value:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                return _encode(value, "value", depth - 1)
            out[k] = _encode_fast(v, depth)
        return out
    if kind is tuple:
        return {_TAG: "tuple", "v": [_encode_fast(v, depth) for v in value]}
    return _encode(value, "value", depth - 1)


def _encode(value: Any, path: str, depth: int) -> Any:
    # Exact type checks first: bool/int/str subclasses (enums!) need their tags.
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        return {_TAG: "float", "v": repr(value)}
    if depth >= _LIMIT:
        raise _too_deep(path)
    depth += 1
    if kind is list:
        return [_encode(v, f"{path}[{i}]", depth) for i, v in enumerate(value)]
    if kind is dict:
        if _TAG not in value and all(type(k) is str for k in value):
            return {k: _encode(v, f"{path}.{k}", depth) for k, v in value.items()}
        pairs = [
            [_encode(k, f"{path}<key>", depth), _encode(v, f"{path}[{shown(k)}]", depth)]
            for k, v in value.items()
        ]
        return {_TAG: "dict", "v": pairs}
    if kind is tuple:
        return {
            _TAG: "tuple",
            "v": [_encode(v, f"{path}[{i}]", depth) for i, v in enumerate(value)],
        }
    if kind in (set, frozenset):
        items = [_encode(v, f"{path}<item>", depth) for v in value]
        # Sorted by their JSON text, so equal sets always give equal bytes.
        try:
            items.sort(key=lambda item: json.dumps(item, sort_keys=True))
        except ValueError:  # an item JSON text cannot hold (an int of 5000 digits)
            raise _unwritable(items, f"{path}<item>") from None
        return {_TAG: "set" if kind is set else "frozenset", "v": items}
    if isinstance(value, Secret):
        return {_TAG: "secret", "v": value.name}  # the value is never written
    if isinstance(value, enum.Enum):
        return {
            _TAG: "enum",
            "cls": _class_ref(kind, value, path),
            "v": _encode(value.value, f"{path}.value", depth),
        }
    if isinstance(value, str):
        # Any other str subclass (LangChain's ``message.text`` accessor) is its
        # text: stored and read back as a plain ``str``.
        return str(value)
    if isinstance(value, BaseModel):
        return {
            _TAG: "model",
            "cls": _class_ref(kind, value, path),
            "v": _encode(value.model_dump(mode="python"), path, depth),
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
    if is_dataclass_value(value):
        return {
            _TAG: "dataclass",
            "cls": _class_ref(kind, value, path),
            "v": _encode(dataclass_fields(value), path, depth),
        }
    raise _unsupported(value, path)


def _import_class(ref: Any, base: type | None) -> type:
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
    # Only ever a model, enum or dataclass class (base None): never call an
    # arbitrary object named in data.
    if base is None:
        if not is_dataclass_class(target):
            raise SerializationError(f"stored value names {ref}, which is not a dataclass")
        return target  # type: ignore[no-any-return]
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
    if tag == "dataclass":
        return rebuild_dataclass(_import_class(value["cls"], None), _decode(v))
    raise SerializationError(f"unknown stored type tag {tag!r}")
