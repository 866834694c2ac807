"""Reading state schemas (TypedDict, dataclass, pydantic) into channels, and back into objects."""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, NotRequired, Required, get_args, get_origin, get_type_hints

from flowcore.compat.langgraph._add_messages import add_messages
from flowcore.compat.langgraph._channels import (
    MISSING,
    BinaryOperatorAggregate,
    Channel,
    LastValue,
)
from flowcore.compat.langgraph._delta import DeltaChannel
from flowcore.compat.langgraph._messages_langchain import LangChainMessages, names_langchain
from flowcore.compat.langgraph._types import ROOT

__all__ = ["IsLastStep", "ManagedValue", "RemainingSteps", "SchemaInfo", "read_schema"]


class ManagedValue:
    """A state key whose value the run computes from its step counter (never a channel)."""

    def __init__(self, name: str, compute: Callable[[int, int], Any]) -> None:
        self.name = name
        self.compute = compute

    def __repr__(self) -> str:
        return f"ManagedValue({self.name})"


_REMAINING = ManagedValue("RemainingSteps", lambda step, stop: stop - step)
_LAST = ManagedValue("IsLastStep", lambda step, stop: step == stop - 1)

RemainingSteps = Annotated[int, _REMAINING]
"""A state key that holds how many supersteps are left before the recursion limit."""
IsLastStep = Annotated[bool, _LAST]
"""A state key that is True in the last superstep the recursion limit allows."""


def managed_of(annotation: Any) -> ManagedValue | None:
    """The managed value an annotation declares, if any."""
    annotation = _strip(annotation)
    if get_origin(annotation) is Annotated:
        for item in annotation.__metadata__:
            if isinstance(item, ManagedValue):
                return item
    return None


def _strip(annotation: Any) -> Any:
    while get_origin(annotation) in (Required, NotRequired):
        annotation = get_args(annotation)[0]
    return annotation


def _delta_of(annotation: Any) -> DeltaChannel | None:
    if get_origin(annotation) is not Annotated:
        return None
    found = [m for m in annotation.__metadata__ if isinstance(m, DeltaChannel)]
    return found[-1] if found else None


def _reducer(annotation: Any, key: str) -> Callable[[Any, Any], Any] | None:
    if get_origin(annotation) is not Annotated:
        return None
    meta = annotation.__metadata__
    if not meta or not callable(meta[-1]):
        return None
    candidate = meta[-1]
    try:
        params = list(inspect.signature(candidate).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) != 2:
        raise ValueError(
            f"Invalid reducer signature for key {key!r}. Expected (a, b) -> c. "
            f"Got {inspect.signature(candidate)}"
        )
    reducer: Callable[[Any, Any], Any] = candidate
    if candidate is add_messages and names_langchain(get_args(annotation)[0]):
        reducer = LangChainMessages(candidate)
    return reducer


def _declared_channel(annotation: Any, key: str) -> Channel | None:
    """The channel an ``Annotated`` key names itself (``Annotated[str, UntrackedValue]``)."""
    from flowcore.compat.langgraph._channel_api import BaseChannel

    if get_origin(annotation) is not Annotated or not annotation.__metadata__:
        return None
    last = annotation.__metadata__[-1]
    if isinstance(last, type) and issubclass(last, BaseChannel):
        made: Channel = last(get_args(annotation)[0])
    elif isinstance(last, BaseChannel):
        made = last.copy()
    else:
        return None
    made.key = key
    return made


_ABSTRACT: tuple[tuple[Any, type], ...] = (
    (collections.abc.Sequence, list),
    (collections.abc.MutableSequence, list),
    (collections.abc.Set, set),
    (collections.abc.MutableSet, set),
    (collections.abc.Mapping, dict),
    (collections.abc.MutableMapping, dict),
)


def _initial(annotation: Any) -> Any:
    """A reducer key starts from its type's empty value when the type has one."""
    base = _strip(get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation)
    origin = get_origin(base) or base
    if origin in (typing.Union, types.UnionType):
        return MISSING
    # LangGraph starts abstract collections from their plain counterparts.
    for abstract, concrete in _ABSTRACT:
        if origin is abstract:
            return concrete()
    try:
        return origin() if isinstance(origin, type) else MISSING
    except Exception:
        return MISSING


class SchemaInfo:
    """What a state schema declares: its keys, each key's channel, and how to build it."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        # A plain type (int, Annotated[list, add]) declares no keys: the whole state is
        # one value, kept under ROOT, as in LangGraph.
        self.root = schema is not None and not hasattr(schema, "__annotations__")
        self.hints: dict[str, Any] = {ROOT: schema} if self.root else _hints(schema)
        if list(self.hints) == [ROOT]:
            # A schema whose one key is ROOT itself (LangGraph's older spelling of a
            # root state) declares the same one value.
            self.root = True
        self.kind = "root" if self.root else _kind(schema)
        found = {k: managed_of(v) for k, v in self.hints.items()}
        self.managed: dict[str, ManagedValue] = {k: v for k, v in found.items() if v is not None}
        """The declared keys the run computes (``RemainingSteps``, ``IsLastStep``)."""
        self.keys: list[str] = [k for k in self.hints if k not in self.managed]
        """The declared keys that are channels, in declaration order."""
        self.channel_keys = frozenset(self.keys)
        """:attr:`keys` as a set."""
        self._key_set = frozenset(self.hints)
        for key in self.keys:
            # Built once now so that a bad declaration (a reducer that does not take two
            # arguments) fails where the schema is given, as LangGraph's does.
            self.channel(key)

    def channel(self, key: str) -> Channel:
        """A fresh channel for ``key``."""
        annotation = _strip(self.hints[key])
        delta = _delta_of(annotation)
        if delta is not None:
            return delta.bound(key, get_args(annotation)[0])
        declared = _declared_channel(annotation, key)
        if declared is not None:
            return declared
        reducer = _reducer(annotation, key)
        if reducer is None:
            return LastValue(key)
        return BinaryOperatorAggregate(key, reducer, _initial(annotation))

    def defaults(self) -> dict[str, Any]:
        """Values a dataclass or pydantic schema gives its fields when none is set."""
        found: dict[str, Any] = {}
        if self.kind == "pydantic":
            for name, field in self.schema.model_fields.items():
                if not field.is_required():
                    found[name] = field.get_default(call_default_factory=True)
        elif self.kind == "dataclass":
            for field in dataclasses.fields(self.schema):
                if field.default is not dataclasses.MISSING:
                    found[field.name] = field.default
                elif field.default_factory is not dataclasses.MISSING:
                    found[field.name] = field.default_factory()
        return found

    def coerce(self, values: Mapping[str, Any]) -> Any:
        """``values`` as the schema's own type (a dict for a TypedDict, the value for a root)."""
        if self.root:
            return values.get(ROOT)
        mine = (
            values
            if self.kind == "typeddict" and values.keys() <= self._key_set
            else {k: v for k, v in values.items() if k in self.hints}
        )
        if self.kind == "pydantic":
            return self.schema(**mine)  # validated, as LangGraph does
        if self.kind == "dataclass":
            merged = {**self.defaults(), **mine}
            try:
                return self.schema(**merged)
            except TypeError:
                return _partial_dataclass(self.schema, merged)
        return mine

    def validate(self, values: Mapping[str, Any]) -> None:
        """Check ``values`` against a pydantic schema (input validation), raising its error."""
        if self.kind == "pydantic":
            self.schema.model_validate({**values})


def _partial_dataclass(cls: Any, values: Mapping[str, Any]) -> Any:
    obj = object.__new__(cls)
    for key, value in values.items():
        object.__setattr__(obj, key, value)
    return obj


def _kind(schema: Any) -> str:
    if isinstance(schema, type) and hasattr(schema, "model_fields"):
        return "pydantic"
    if dataclasses.is_dataclass(schema):
        return "dataclass"
    return "typeddict"


def _hints(schema: Any) -> dict[str, Any]:
    if schema is None:
        return {}
    if _kind(schema) == "pydantic":
        found: dict[str, Any] = {}
        for name, field in schema.model_fields.items():
            annotation = field.annotation
            if field.metadata:
                annotation = Annotated[(annotation, *field.metadata)]
            found[name] = annotation
        try:
            hinted = get_type_hints(schema, include_extras=True)
        except Exception:
            hinted = {}
        for name in found:
            if name in hinted and get_origin(hinted[name]) is Annotated:
                found[name] = hinted[name]
        return found
    try:
        hints = get_type_hints(schema, include_extras=True)
    except Exception:
        hints = dict(getattr(schema, "__annotations__", {}))
    return {k: v for k, v in hints.items() if k != "__slots__" and not k.startswith("_abc")}


_CACHE: dict[Any, SchemaInfo] = {}


def read_schema(schema: Any) -> SchemaInfo:
    """The :class:`SchemaInfo` of ``schema`` (cached per schema)."""
    try:
        info = _CACHE.get(schema)
    except TypeError:
        return SchemaInfo(schema)
    if info is None:
        info = _CACHE[schema] = SchemaInfo(schema)
    return info
