"""State schemas: which keys a graph's state has, and how writes to each combine.

A schema is read once, at compile time, from a ``TypedDict`` or a pydantic
model. At run time the state is a plain ``dict`` of key to value; writes are
folded in through the per-key reducers in the order the scheduler gives, and
only the keys a write touches are rebuilt (no deep copies).
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, Required, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ValidationError

from flowcore._shown import shown
from flowcore.errors import GraphDefinitionError, InvalidInputError, InvalidUpdateError
from flowcore.state.reducers import Reducer, append, merge, replace

__all__ = ["StateSchema", "Write"]

Write = tuple[str, Mapping[str, Any]]
"""One node's update: ``(node_name, {key: value, ...})``."""

_BUILTIN_REDUCERS: tuple[Reducer, ...] = (append, merge)


@dataclass(frozen=True, slots=True)
class _Channel:
    name: str
    reducer: Reducer | None  # None means replace
    # Called once per run so that no two runs share a mutable starting value;
    # None when the key starts absent.
    default: Callable[[], Any] | None


class StateSchema:
    """The keys of a graph's state, their reducers and their initial values.

    Example:
        >>> from typing import Annotated, TypedDict
        >>> class S(TypedDict):
        ...     log: Annotated[list[str], append]
        ...     answer: str
        >>> schema = StateSchema.from_type(S)
        >>> schema.apply({"log": ["a"]}, [("n1", {"log": ["b"], "answer": "x"})])
        {'log': ['a', 'b'], 'answer': 'x'}
    """

    __slots__ = ("_channels", "_reducers", "keys", "model", "name", "source")

    def __init__(
        self,
        source: type[Any],
        channels: Sequence[_Channel],
        model: type[BaseModel] | None,
    ) -> None:
        self.source = source
        self.name: str = getattr(source, "__name__", repr(source))
        self.model = model
        self._channels: dict[str, _Channel] = {c.name: c for c in channels}
        self._reducers: dict[str, Reducer | None] = {c.name: c.reducer for c in channels}
        self.keys: tuple[str, ...] = tuple(c.name for c in channels)

    # ------------------------------------------------------------------ build
    @classmethod
    def from_type(cls, schema: type[Any]) -> StateSchema:
        """Read keys and ``Annotated`` reducers from a TypedDict or pydantic model.

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     x: int
            >>> StateSchema.from_type(S).keys
            ('x',)
        """
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return cls(schema, _pydantic_channels(schema), schema)
        if _is_typeddict(schema):
            return cls(schema, _typeddict_channels(schema), None)
        raise GraphDefinitionError(
            [
                f"state schema {shown(schema)} must be a TypedDict or a pydantic BaseModel "
                "subclass; declare the state keys as one of those"
            ]
        )

    # ------------------------------------------------------------- queries
    def reducer(self, key: str) -> Reducer | None:
        """The reducer of ``key``, or None when writes replace the value.

        Example:
            >>> from typing import Annotated, TypedDict
            >>> class S(TypedDict):
            ...     log: Annotated[list[str], append]
            >>> StateSchema.from_type(S).reducer("log") is append
            True
        """
        return self._reducers[key]

    def __contains__(self, key: object) -> bool:
        return key in self._reducers

    # ------------------------------------------------------------- run time
    def initial(self, run_input: Mapping[str, Any] | BaseModel | None) -> dict[str, Any]:
        """Build the starting state from defaults plus the run's input.

        The input is applied through the reducers, as if written by the run's
        start. Unknown keys and (for pydantic schemas) invalid values raise
        :class:`InvalidInputError`.

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     x: int
            >>> StateSchema.from_type(S).initial({"x": 1})
            {'x': 1}
        """
        if isinstance(run_input, BaseModel):
            return self._initial_from_model(run_input)
        if run_input is not None and not isinstance(run_input, Mapping):
            example = self.keys[0] if self.keys else "key"
            raise InvalidInputError(
                "run input must be a mapping of state keys (or None), got "
                f"{type(run_input).__name__}; pass e.g. {{{shown(example)}: value}}"
            )
        values: dict[str, Any] = {
            c.name: c.default() for c in self._channels.values() if c.default is not None
        }
        if run_input:
            unknown = [k for k in run_input if k not in self._reducers]
            if unknown:
                raise InvalidInputError(
                    f"input key{'s' if len(unknown) > 1 else ''} {', '.join(map(shown, unknown))} "
                    f"not in state schema {self.name} (keys: {', '.join(self.keys)}); "
                    "add them to the schema or drop them from the input"
                )
            try:
                values = self.apply(values, [("__input__", run_input)])
            except InvalidUpdateError as exc:
                raise InvalidInputError(str(exc)) from exc
        if self.model is not None:
            values = self._validate_model(values)
        return values

    def _initial_from_model(self, instance: BaseModel) -> dict[str, Any]:
        # A model instance already is a whole state, defaults included; folding
        # its values through the reducers would count each default twice.
        given = {k: getattr(instance, k) for k in type(instance).model_fields}
        unknown = [k for k in given if k not in self._reducers]
        if unknown:
            raise InvalidInputError(
                f"input model {type(instance).__name__} has field"
                f"{'s' if len(unknown) > 1 else ''} {', '.join(map(shown, unknown))} "
                f"not in state schema {self.name} (keys: {', '.join(self.keys)})"
            )
        values = {c.name: c.default() for c in self._channels.values() if c.default is not None}
        values.update(given)
        if self.model is not None:
            values = self._validate_model(values)
        return values

    def _validate_model(self, values: dict[str, Any]) -> dict[str, Any]:
        assert self.model is not None
        try:
            model = self.model.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
                for err in exc.errors()
            )
            raise InvalidInputError(
                f"input does not fit state model {self.name}: {problems}"
            ) from None
        return {k: getattr(model, k) for k in self.keys}

    def view(self, values: Mapping[str, Any]) -> Any:
        """What a node receives: a shallow dict copy, or a pydantic model instance.

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     x: int
            >>> StateSchema.from_type(S).view({"x": 1})
            {'x': 1}
        """
        if self.model is not None:
            return self.model.model_construct(**values)
        return dict(values)

    def check_update(self, node: str, update: object) -> Mapping[str, Any] | None:
        """Validate the shape of what a node returned: a mapping of known keys, or None.

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     x: int
            >>> StateSchema.from_type(S).check_update("n", {"x": 2})
            {'x': 2}
        """
        if update is None:
            return None
        if isinstance(update, BaseModel) and self.model is not None:
            if not isinstance(update, self.model):
                raise InvalidUpdateError(
                    f"node {shown(node)} returned a {type(update).__name__}; return a dict of "
                    f"{self.name} keys or a {self.name} instance",
                    node=node,
                )
            return {k: getattr(update, k) for k in update.model_fields_set}
        if not isinstance(update, Mapping):
            raise InvalidUpdateError(
                f"node {shown(node)} returned {type(update).__name__}; a node must return a dict "
                f"of state keys to new values (keys of {self.name}: {', '.join(self.keys)}) "
                "or None",
                node=node,
            )
        for key in update:
            if key not in self._reducers:
                raise InvalidUpdateError(
                    f"node {shown(node)} wrote key {shown(key)}, which is not in state schema "
                    f"{self.name} (keys: {', '.join(self.keys)}); add it to the schema",
                    node=node,
                    key=str(key),
                )
        return update

    def apply(self, values: Mapping[str, Any], writes: Iterable[Write]) -> dict[str, Any]:
        """Fold one superstep's writes into ``values``, in the order given.

        Two writes to a replace-key in the same call raise
        :class:`InvalidUpdateError` naming both nodes. ``values`` is not
        modified; a new dict is returned.

        Example:
            >>> from typing import TypedDict
            >>> class S(TypedDict):
            ...     x: int
            >>> StateSchema.from_type(S).apply({"x": 1}, [("a", {"x": 2})])
            {'x': 2}
        """
        out = dict(values)
        replaced_by: dict[str, str] = {}
        reducers = self._reducers
        for node, update in writes:
            for key, new in update.items():
                reducer = reducers[key]
                if reducer is None or reducer is replace:
                    first = replaced_by.get(key)
                    if first is not None:
                        raise replace_conflict(key, first, node)
                    replaced_by[key] = node
                    out[key] = new
                    continue
                try:
                    if key in out:
                        out[key] = reducer(out[key], new)
                    elif reducer in _BUILTIN_REDUCERS:
                        out[key] = reducer(None, new)
                    else:
                        out[key] = new
                except InvalidUpdateError:
                    raise
                except Exception as exc:
                    name = getattr(reducer, "__name__", repr(reducer))
                    raise InvalidUpdateError(
                        f"reducer {name} for key {shown(key)} rejected the write of node "
                        f"{shown(node)}: "
                        f"{type(exc).__name__}: {exc}",
                        node=node,
                        key=key,
                    ) from exc
        return out


# ---------------------------------------------------------------- helpers
def replace_conflict(key: str, first: str, second: str) -> InvalidUpdateError:
    """The error for two writes to one replace-key in the same superstep.

    Example:
        >>> replace_conflict("x", "left", "right").nodes
        ('left', 'right')
    """
    return InvalidUpdateError(
        f"nodes {shown(first)} and {shown(second)} both wrote replace-key {shown(key)} in the same "
        "superstep, so the result would depend on timing; give the key a reducer, "
        "e.g. Annotated[list[T], append], or let only one of them write it",
        node=second,
        key=key,
        nodes=(first, second),
    )


def _is_typeddict(tp: object) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _reducer_from_metadata(metadata: Iterable[object]) -> Reducer | None:
    found: Reducer | None = None
    for item in metadata:
        if callable(item) and not isinstance(item, type):
            found = typing.cast(Reducer, item)
    return None if found is replace else found


def _default_for(tp: object) -> Callable[[], Any] | None:
    """A factory for the empty value of a reducer key (``list`` -> ``[]``), if any."""
    base = _unwrap_required(tp)
    base = get_origin(base) or base
    if isinstance(base, type):
        try:
            base()
        except Exception:
            return None
        return typing.cast(Callable[[], Any], base)
    return None


def _unwrap_required(tp: object) -> object:
    while get_origin(tp) in (Required, NotRequired):
        tp = get_args(tp)[0]
    return tp


def _typeddict_channels(schema: type[Any]) -> list[_Channel]:
    try:
        hints = get_type_hints(schema, include_extras=True)
    except Exception as exc:
        raise GraphDefinitionError(
            [f"cannot read the annotations of state schema {schema.__name__}: {exc}"]
        ) from exc
    channels = []
    for name, hint in hints.items():
        hint = _unwrap_required(hint)
        reducer: Reducer | None = None
        base: object = hint
        if get_origin(hint) is typing.Annotated:
            base, *metadata = get_args(hint)
            reducer = _reducer_from_metadata(metadata)
        default = _default_for(base) if reducer is not None else None
        channels.append(_Channel(name, reducer, default))
    return channels


def _pydantic_channels(model: type[BaseModel]) -> list[_Channel]:
    channels = []
    for name, field in model.model_fields.items():
        reducer = _reducer_from_metadata(field.metadata)
        default: Callable[[], Any] | None
        if not field.is_required():
            # pydantic deep-copies mutable defaults and calls factories anew.
            default = functools.partial(field.get_default, call_default_factory=True)
        elif reducer is not None:
            default = _default_for(field.annotation)
        else:
            default = None
        channels.append(_Channel(name, reducer, default))
    return channels


def describe_reducer(reducer: Callable[..., Any] | None) -> str:
    """A short name for a reducer, for messages and docs."""
    if reducer is None:
        return "replace"
    return getattr(reducer, "__name__", repr(reducer))
