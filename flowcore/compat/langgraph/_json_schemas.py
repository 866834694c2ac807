"""``get_input_jsonschema``/``get_output_jsonschema``/``get_context_jsonschema`` of a graph.

A state schema that is a pydantic model gives its own JSON schema, a
TypedDict pydantic's schema of it; any other schema (a dataclass, a plain
class) becomes a pydantic model named after the graph (``LangGraphInput``)
whose fields are the schema's keys, each required unless it has a default
or its type admits ``None``, as LangGraph builds it.

Example:
    >>> from typing import TypedDict
    >>> class S(TypedDict):
    ...     n: int
    >>> state_json_schema(S, "LangGraphInput")["required"]
    ['n']
"""

from __future__ import annotations

import dataclasses
import types
import typing
import uuid
from typing import Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, create_model
from typing_extensions import is_typeddict

from flowcore.compat.langgraph._types import ROOT
from flowcore.compat.langgraph._warnings import LangGraphDeprecatedSinceV10, warn_deprecated

__all__ = ["JsonSchemaCalls", "context_json_schema", "state_json_schema"]


def _admits_none(annotation: Any) -> bool:
    if get_origin(annotation) is typing.Annotated:
        return _admits_none(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return any(a is type(None) for a in get_args(annotation))
    return annotation is None or annotation is type(None) or annotation is Any


def _plain(annotation: Any) -> Any:
    """``annotation`` without ``Required``/``NotRequired`` around it."""
    while get_origin(annotation) in (typing.Required, typing.NotRequired):
        annotation = get_args(annotation)[0]
    return annotation


def _default(schema: Any, name: str, annotation: Any) -> Any:
    if dataclasses.is_dataclass(schema):
        for found in dataclasses.fields(schema):
            if found.name != name:
                continue
            if found.default is not dataclasses.MISSING and found.default is not ...:
                return found.default
            if found.default_factory is not dataclasses.MISSING:
                return found.default_factory()
    return None if _admits_none(annotation) else ...


def state_json_schema(schema: Any, title: str) -> dict[str, Any]:
    """The JSON schema of a state schema, titled ``title`` when it is built here."""
    from pydantic import BaseModel, PydanticUserError, RootModel, TypeAdapter, create_model

    if isinstance(schema, type) and issubclass(schema, BaseModel):
        found: dict[str, Any] = schema.model_json_schema()
        return found
    if is_typeddict(schema):
        try:
            found = TypeAdapter(schema).json_schema()
        except PydanticUserError:
            # pydantic takes only typing_extensions' TypedDict before Python 3.12: the same
            # schema, built from the keys and which of them are required.
            required: frozenset[str] = getattr(schema, "__required_keys__", frozenset())
            hints = get_type_hints(schema, include_extras=True)
            fields = {k: (_plain(v), ... if k in required else None) for k, v in hints.items()}
            found = create_model(schema.__name__, **fields).model_json_schema()  # type: ignore[call-overload]
        return found
    hints = (
        get_type_hints(schema, include_extras=True) if hasattr(schema, "__annotations__") else {}
    )
    if not hasattr(schema, "__annotations__") or list(hints) == [ROOT]:
        # A root state (the whole state is one value): the value's own schema, as a
        # pydantic root model gives it, not an object with a field.
        value = hints.get(ROOT, schema)
        model = create_model(title, __base__=RootModel[value], root=(value, None))  # type: ignore[valid-type]
        found = model.model_json_schema()
        return found
    fields = {k: (v, _default(schema, k, v)) for k, v in hints.items() if k != ROOT}
    found = create_model(title, **fields).model_json_schema()  # type: ignore[call-overload]
    return found


def context_json_schema(schema: Any) -> dict[str, Any] | None:
    """The JSON schema of a context schema (None without one), titled with its name."""
    if schema is None:
        return None
    return state_json_schema(schema, getattr(schema, "__name__", "Context"))


class JsonSchemaCalls:
    """The JSON-schema methods of a compiled StateGraph (``builder`` holds its schemas)."""

    builder: Any
    name: str

    def get_input_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON schema of the graph's input.

        Example:
            >>> # app.get_input_jsonschema()["properties"]
        """
        return state_json_schema(self.builder.input_schema, f"{self.name}Input")

    def get_output_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON schema of the graph's output."""
        return state_json_schema(self.builder.output_schema, f"{self.name}Output")

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The JSON schema of the graph's ``context_schema`` (None without one)."""
        return context_json_schema(self.builder.context_schema)

    def config_schema(self, *, include: typing.Sequence[str] | None = None) -> type[BaseModel]:
        """Deprecated: a pydantic model of the run config, ``configurable`` typed by the context.

        ``include`` adds other top-level config keys (``tags``, ``metadata`` ...).
        """
        warn_deprecated(
            LangGraphDeprecatedSinceV10,
            "`config_schema` is deprecated. Use `get_context_jsonschema` "
            "for the relevant schema instead.",
        )
        return _config_model(self, include)

    def get_config_jsonschema(
        self, *, include: typing.Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Deprecated: the JSON schema of :meth:`config_schema`'s model."""
        warn_deprecated(
            LangGraphDeprecatedSinceV10,
            "`get_config_jsonschema` is deprecated. Use `get_context_jsonschema` instead.",
        )
        return _config_model(self, include).model_json_schema()


# The top-level keys of a run config (LangChain's RunnableConfig) and their types.
_CONFIG_KEYS: dict[str, Any] = {
    "tags": list[str],
    "metadata": dict[str, Any],
    "callbacks": Any,
    "run_name": str,
    "max_concurrency": int | None,
    "recursion_limit": int,
    "run_id": uuid.UUID | None,
}


def _config_model(graph: Any, include: typing.Sequence[str] | None) -> type[BaseModel]:
    """What ``config_schema()`` returns: the context under ``configurable``, and ``include``."""
    fields: dict[str, Any] = {}
    context = graph._context_schema()
    if context is not None:
        fields["configurable"] = (context, None)
    for key in include or ():
        if key in _CONFIG_KEYS:
            fields[key] = (_CONFIG_KEYS[key], None)
    return create_model(f"{graph.name}Config", **fields)
