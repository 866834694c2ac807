"""Tools as ``ToolNode`` runs them: flowcore ``Tool``s and typed Python callables behind one face.

A tool offers a name, a description and a JSON Schema of its arguments (a
:class:`~flowcore.llm.ToolSpec` for the model), checks the arguments a model
sent, and runs. Bad arguments raise :class:`ToolInvocationError` with
LangGraph's wording, which ``ToolNode`` turns into an error ``ToolMessage``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ValidationError, create_model

from flowcore.errors import FlowcoreError
from flowcore.llm.types import ToolSpec
from flowcore.runtime import call_node
from flowcore.tools.runner import Tool

__all__ = [
    "INVALID_TOOL_NAME_ERROR_TEMPLATE",
    "TOOL_CALL_ERROR_TEMPLATE",
    "InjectedState",
    "ToolInvocationError",
    "WrappedTool",
    "message_content",
    "tool_content",
    "wrap_tool",
]

INVALID_TOOL_NAME_ERROR_TEMPLATE = (
    "Error: {requested_tool} is not a valid tool, try one of [{available_tools}]."
)
TOOL_CALL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
_INVOCATION_ERROR_TEMPLATE = (
    "Error invoking tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)

# Content block types a tool may return as-is (LangChain's list).
_BLOCK_TYPES = (
    "text",
    "image_url",
    "image",
    "json",
    "search_result",
    "custom_tool_call_output",
    "document",
    "file",
)


class ToolInvocationError(FlowcoreError, ValueError):
    """The model called a tool with arguments that do not fit its schema.

    ``message`` is what the model reads back: the tool, the arguments it sent
    and each failing field.

    Example:
        >>> err = ToolInvocationError("search", {"q": 1}, ["q: Input should be a valid string"])
        >>> print(err.message.splitlines()[1])
         q: Input should be a valid string
    """

    code = "compat-tool-invocation"

    def __init__(self, tool_name: str, tool_kwargs: Mapping[str, Any], errors: Sequence[str]):
        self.tool_name = tool_name
        self.tool_kwargs = dict(tool_kwargs)
        self.message = _INVOCATION_ERROR_TEMPLATE.format(
            tool_name=tool_name, tool_kwargs=self.tool_kwargs, error="\n".join(errors)
        )
        super().__init__(self.message)


class InjectedState:
    """Marks a tool parameter that receives the graph state (or one key of it), not model input.

    Example:
        >>> from typing import Annotated
        >>> def count(query: str, state: Annotated[dict, InjectedState]) -> int:
        ...     return len(state["messages"])
        >>> wrap_tool(count).spec().parameters["required"]
        ['query']
    """

    def __init__(self, field: str | None = None) -> None:
        self.field = field


def _injection(annotation: Any) -> InjectedState | None:
    if get_origin(annotation) is not Annotated:
        return None
    for meta in get_args(annotation)[1:]:
        if meta is InjectedState:
            return InjectedState()
        if isinstance(meta, InjectedState):
            return meta
    return None


@dataclass(frozen=True, slots=True)
class WrappedTool:
    """One tool as ``ToolNode`` sees it: its model-facing spec and how to run it.

    Example:
        >>> def add(a: int, b: int) -> int:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> wrap_tool(add).spec().description
        'Add two numbers.'
    """

    name: str
    description: str
    args_schema: type[BaseModel]
    run: Callable[[BaseModel, Any], Awaitable[Any]]
    injected: Mapping[str, InjectedState] = field(default_factory=dict)

    def spec(self) -> ToolSpec:
        """The tool as offered to a model."""
        schema = self.args_schema.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)
        return ToolSpec(self.name, self.description, schema)

    async def ainvoke(self, args: Mapping[str, Any], state: Any = None) -> Any:
        """Check ``args`` against the schema, then run; ``state`` feeds injected parameters.

        Raises:
            ToolInvocationError: the arguments do not fit the schema.

        Example:
            >>> # await wrap_tool(add).ainvoke({"a": 1, "b": 2})
        """
        try:
            parsed = self.args_schema.model_validate(dict(args))
        except ValidationError as exc:
            errors = [
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors()
                if e["loc"] and e["loc"][0] not in self.injected
            ]
            raise ToolInvocationError(self.name, args, errors) from exc
        return await self.run(parsed, _InjectionSource(state, set(args)))


@dataclass(frozen=True, slots=True)
class _InjectionSource:
    state: Any
    given: set[str]


def _state_part(state: Any, marker: InjectedState) -> Any:
    if marker.field is None:
        return state
    if isinstance(state, Mapping):
        return state[marker.field]
    return getattr(state, marker.field)


def _from_callable(func: Callable[..., Any]) -> WrappedTool:
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or name == "<lambda>":
        raise FlowcoreError(
            f"tool {func!r} has no usable name; pass a def function or a flowcore Tool"
        )
    try:
        hints = get_type_hints(func, include_extras=True)
    except Exception as exc:
        raise FlowcoreError(
            f"tool {name!r}: its type hints cannot be resolved ({exc}); define the types it "
            "names at module level"
        ) from None
    fields: dict[str, Any] = {}
    injected: dict[str, InjectedState] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, Any)
        marker = _injection(annotation)
        if marker is not None:
            injected[param.name] = marker
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    description = inspect.getdoc(func) or ""
    schema = create_model(name, __doc__=description or None, **fields)
    is_async = inspect.iscoroutinefunction(func)

    async def run(parsed: BaseModel, source: Any) -> Any:
        # Only the arguments the model sent: the function keeps its own defaults.
        kwargs = {k: getattr(parsed, k) for k in type(parsed).model_fields if k in source.given}
        for key, marker in injected.items():
            kwargs[key] = _state_part(source.state, marker)
        return await call_node(func, is_async, (), kwargs)

    return WrappedTool(name, description, schema, run, injected)


def _from_flowcore(tool: Tool) -> WrappedTool:
    async def run(parsed: BaseModel, source: Any) -> Any:
        async with asyncio.timeout(tool.timeout):
            raw = await tool.handler(parsed)
        output = tool.output_model.model_validate(
            raw.model_dump() if isinstance(raw, BaseModel) else raw
        )
        return output.model_dump(mode="json")

    return WrappedTool(tool.name, tool.description, tool.input_model, run)


def _from_langchain(tool: Any) -> WrappedTool | None:
    """A LangChain tool (``@tool``, ``StructuredTool``): its own schema, run by ``ainvoke``."""
    name = getattr(tool, "name", None)
    schema = getattr(tool, "tool_call_schema", None) or getattr(tool, "args_schema", None)
    if not (
        isinstance(name, str)
        and isinstance(schema, type)
        and issubclass(schema, BaseModel)
        and callable(getattr(tool, "ainvoke", None))
    ):
        return None

    async def run(parsed: BaseModel, source: Any) -> Any:
        # The arguments as the model sent them: the tool validates them again itself.
        args = {k: getattr(parsed, k) for k in type(parsed).model_fields if k in source.given}
        return await tool.ainvoke(args)

    return WrappedTool(name, str(getattr(tool, "description", "") or ""), schema, run)


def wrap_tool(tool: Tool | WrappedTool | Callable[..., Any]) -> WrappedTool:
    """A flowcore :class:`~flowcore.tools.Tool` or a typed callable, ready for ``ToolNode``.

    A callable's name, docstring and type hints give the tool's name,
    description and argument schema; sync callables run in a worker thread.
    A flowcore ``Tool`` keeps its input model and timeout, and its validated
    output becomes the result.

    Example:
        >>> def search(query: str) -> str:
        ...     '''Search the web.'''
        ...     return "..."
        >>> wrap_tool(search).name
        'search'
    """
    if isinstance(tool, WrappedTool):
        return tool
    if isinstance(tool, Tool):
        return _from_flowcore(tool)
    langchain = _from_langchain(tool)
    if langchain is not None:
        return langchain
    if callable(tool):
        return _from_callable(tool)
    raise FlowcoreError(
        f"cannot use {tool!r} as a tool: pass a flowcore Tool or a function with type hints"
    )


def _stringify(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def tool_content(output: Any) -> str | list[Any]:
    """A tool's return value as ``ToolMessage`` content, the way LangChain's tools shape it.

    Text stays text, a list of content blocks stays a list, anything else
    becomes JSON (or ``str()`` when it is not JSON-able).

    Example:
        >>> tool_content({"temp": 21}), tool_content("sunny"), tool_content(["a", "b"])
        ('{"temp": 21}', 'sunny', '["a", "b"]')
    """
    # First the tool's own formatting, then ToolNode's: a list of plain strings
    # survives the first and is turned into JSON by the second.
    content: Any
    if isinstance(output, str):
        content = output
    elif isinstance(output, Sequence) and all(
        isinstance(x, str) or (isinstance(x, dict) and x.get("type") in _BLOCK_TYPES)
        for x in output
    ):
        content = list(output)
    else:
        content = _stringify(output)
    return message_content(content)


def message_content(content: Any) -> str | list[Any]:
    """Content a ``ToolMessage`` already has, checked again as ``ToolNode`` does.

    Example:
        >>> message_content([{"type": "text", "text": "hi"}]), message_content(["a"])
        ([{'type': 'text', 'text': 'hi'}], '["a"]')
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(x, dict) and x.get("type") in _BLOCK_TYPES for x in content
    ):
        return content
    return _stringify(content)
