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

from flowcore._shown import shown
from flowcore.checkpoint.dataclass_values import (
    dataclass_fields,
    is_dataclass_class,
    is_dataclass_value,
    rebuild_dataclass,
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

_TAG = "__fc__"

MAX_NESTING = 100
"""How many containers deep a stored value may nest.

Deeper values are refused with a :class:`~flowcore.errors.SerializationError`
rather than left to hit Python's recursion limit while they are encoded,
copied or, worst, decoded again from a store long after they were written.
"""

# Stores wrap values in records of their own (checkpoint.snapshot.values.<key>): the
# serializer allows that many levels on top of MAX_NESTING, so a value that passed
# check_storable is never refused when it is stored inside a record.
_WRAPPING = 10
_LIMIT = MAX_NESTING + _WRAPPING

# Python refuses to turn ints of more than 4300 digits into text (and so into
# JSON); 14,000 bits stay just below that limit.
_MAX_INT_BITS = 14_000


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


def check_json_value(value: Any, *, path: str = "value") -> None:
    """Raise :class:`~flowcore.errors.SerializationError` unless ``value`` is plain JSON data.

    Plain JSON data is what a JSON document can hold and read back: dicts
    with string keys, lists (tuples count as lists), strings without lone
    surrogates, bools, None, ints short enough to write as text and finite
    floats (JSON has no NaN or Infinity), nested at most :data:`MAX_NESTING`
    deep. Pipelines, task plans and their run inputs must be plain JSON.
    The error's ``path`` says where the first bad value sits.

    Example:
        >>> check_json_value({"doc": ["a", 1, 2.5, None]})
        >>> try:
        ...     check_json_value({"score": float("nan")}, path="input")
        ... except SerializationError as exc:
        ...     exc.path
        'input.score'
    """
    # Iterative, so a value of any depth is judged without touching the recursion limit.
    todo: list[tuple[Any, str, int]] = [(value, path, 0)]
    while todo:
        item, where, depth = todo.pop()
        kind = type(item)
        if item is None or kind is bool:
            continue
        if kind is str:
            if not _is_utf8(item):
                raise _unwritable(item, where)
            continue
        if kind is int:
            if item.bit_length() > _MAX_INT_BITS:
                raise _unwritable(item, where)
            continue
        if kind is float:
            if not math.isfinite(item):
                raise SerializationError(
                    f"{where}: {item!r} is not a JSON number (JSON has no NaN or Infinity); "
                    "use null or a string instead",
                    path=where,
                )
            continue
        if kind not in (dict, list, tuple):
            raise SerializationError(
                f"{where}: a {type(item).__name__} is not JSON data; use objects, arrays, "
                "strings, numbers, true/false or null",
                path=where,
            )
        if depth >= MAX_NESTING:
            raise _too_deep(where)
        if kind is dict:
            for k, v in item.items():
                if type(k) is not str:
                    raise SerializationError(
                        f"{where}: the key {shown(k)} is not a string; JSON object keys are "
                        "strings",
                        path=where,
                    )
                if not _is_utf8(k):
                    raise _unwritable({k: None}, where)
                todo.append((v, f"{where}.{k}", depth + 1))
        else:
            todo.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))


def check_text_and_nesting(value: Any, *, path: str = "value", text: bool = True) -> None:
    """Raise :class:`~flowcore.errors.SerializationError` for the two faults no consumer takes.

    A string (or dict key) with a lone surrogate cannot be encoded as UTF-8,
    so no model, tool, log or store can take it; containers nested more than
    :data:`MAX_NESTING` deep exhaust Python's recursion limit in whatever
    walks them. Objects of any other type pass: this is the check for values
    that need not be storable, like a block's inputs. With ``text=False`` only
    the nesting is checked.

    Example:
        >>> check_text_and_nesting({"when": object(), "text": "fine"})
        >>> try:
        ...     check_text_and_nesting(["ok", "\\udc80"], path="inputs")
        ... except SerializationError as exc:
        ...     exc.path
        'inputs[1]'
    """
    todo: list[tuple[Any, str, int]] = [(value, path, 0)]
    while todo:
        item, where, depth = todo.pop()
        if isinstance(item, str):
            if text and not _is_utf8(item):
                raise _unwritable(str(item), where)
            continue
        if not isinstance(item, dict | list | tuple | set | frozenset):
            continue
        if depth >= MAX_NESTING:
            raise _too_deep(where)
        if isinstance(item, dict):
            for k, v in item.items():
                if text and isinstance(k, str) and not _is_utf8(k):
                    raise _unwritable({str(k): None}, where)
                todo.append(
                    (v, f"{where}.{k}" if isinstance(k, str) else f"{where}[{shown(k)}]", depth + 1)
                )
        else:
            todo.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))


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


def _too_deep(path: str) -> SerializationError:
    # The path of a value this deep is long: keep its ends, where the key names are.
    shown = path if len(path) <= 120 else f"{path[:60]}...{path[-50:]}"
    return SerializationError(
        f"cannot store {shown}: it nests lists, dicts or other containers more than "
        f"{MAX_NESTING} levels deep (or contains itself); flatten it, or store it as a "
        "JSON string",
        path=path,
    )


def _unwritable(encoded: Any, path: str) -> SerializationError:
    """The error for the first string or int in ``encoded`` that JSON text cannot hold."""
    todo: list[tuple[Any, str]] = [(encoded, path)]
    while todo:
        value, where = todo.pop()
        kind = type(value)
        if kind is str and not _is_utf8(value):
            return SerializationError(
                f"cannot store {where}: the string holds a lone surrogate "
                f"({_first_surrogate(value)}), which is not valid Unicode text; decode the "
                "text it came from with errors='replace', or drop the character",
                path=where,
            )
        if kind is int and value.bit_length() > _MAX_INT_BITS:
            return SerializationError(
                f"cannot store {where}: an int of about {value.bit_length() * 3 // 10} digits "
                "is too long to write as text; store it as a string, or round it",
                path=where,
            )
        if kind is dict:
            for k, v in value.items():
                if not _is_utf8(k):
                    return SerializationError(
                        f"cannot store {where}: the key {_first_surrogate(k)} holds a lone "
                        "surrogate, which is not valid Unicode text; rename the key",
                        path=where,
                    )
                todo.append((v, f"{where}.{k}"))
        elif kind is list:
            todo.extend((v, f"{where}[{i}]") for i, v in enumerate(value))
    return SerializationError(f"cannot store {path}: it cannot be written as JSON", path=path)


def _is_utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _first_surrogate(text: str) -> str:
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            return f"\\u{ord(char):04x}"
    return repr(text[:20])


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


# The scalars JSON writes and reads back as they are (a float may not be finite).
_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})


def _is_plain_json(value: Any, depth: int) -> bool:
    """True if ``value`` is made only of types JSON writes and reads back unchanged.

    Exact types only: a subclass (an enum, an ``OrderedDict``) needs a tag,
    and so do tuples, non-finite floats and dicts with a key that is not a
    string or that looks like a tag.
    """
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return True
    if kind is dict:
        if _TAG in value or depth >= _LIMIT:
            return False
        depth += 1
        # Plain loops, not all(): no generator per container on this hot path; leaves
        # (most values of a record) are checked here, without a call each.
        # An empty dict or list below is plain where a call would say so: under the limit.
        shallow = depth < _LIMIT
        for k, v in value.items():
            if type(k) is not str:
                return False
            if type(v) in _LEAVES or (shallow and not v and type(v) in _EMPTIES):
                continue
            if not _is_plain_json(v, depth):
                return False
        return True
    if kind is list:
        if depth >= _LIMIT:
            return False
        depth += 1
        shallow = depth < _LIMIT
        for v in value:
            if type(v) in _LEAVES or (shallow and not v and type(v) in _EMPTIES):
                continue
            if not _is_plain_json(v, depth):
                return False
        return True
    if kind is float:
        return math.isfinite(value)
    return False


# Exact types _is_plain_json accepts as they are (None's type included), and the
# containers it accepts empty below its nesting limit.
_LEAVES = frozenset({str, int, bool, type(None)})
_EMPTIES = frozenset({dict, list})


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
