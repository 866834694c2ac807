"""LangChain tools (``@tool`` functions, ``BaseTool`` subclasses) in ``ToolNode``.

A LangChain tool is called the way LangGraph calls it: with the whole tool
call (so its ``ToolMessage`` answers the call's id) and the node's config (so
its callbacks, and the ``tools`` stream mode, hear it). A parameter typed
``ToolRuntime`` is filled in by ``ToolNode``. Nothing here imports LangChain:
a LangChain tool can only exist once ``langchain_core.tools`` is loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_origin, get_type_hints

from pydantic import BaseModel, create_model

from flowcore.compat.langgraph._tool_stream import ToolRuntimeFields, tool_runtime_class
from flowcore.compat.langgraph._tooling import WrappedTool

__all__ = ["LangChainTool", "is_langchain_message", "langchain_tool"]


def _runtime_params(tool: Any) -> list[str]:
    """The parameters of ``tool``'s function typed ``ToolRuntime`` (``ToolRuntime[...]`` too)."""
    func = getattr(tool, "coroutine", None) or getattr(tool, "func", None)
    if func is None:
        func = getattr(tool, "_arun", None) or getattr(tool, "_run", None)
    try:
        hints = get_type_hints(func)
    except Exception:
        return []
    found = []
    for name, hint in hints.items():
        kind = get_origin(hint) or hint
        if isinstance(kind, type) and issubclass(kind, ToolRuntimeFields):
            found.append(name)
    return found


def _schema(tool: Any) -> type[BaseModel]:
    schema = getattr(tool, "tool_call_schema", None)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    return create_model(str(tool.name))


async def _not_called(parsed: BaseModel, source: Any) -> Any:
    raise RuntimeError("a LangChain tool is called with LangChainTool.call")


@dataclass(frozen=True, slots=True)
class LangChainTool(WrappedTool):
    """A LangChain tool as ``ToolNode`` holds it.

    Example:
        >>> # LangChainTool.of(search_tool).name
    """

    tool: Any = None
    runtime_params: tuple[str, ...] = ()

    @classmethod
    def of(cls, tool: Any) -> LangChainTool:
        """Wrap LangChain tool ``tool``."""
        return cls(
            str(tool.name),
            str(tool.description or ""),
            _schema(tool),
            _not_called,
            {},
            tool,
            tuple(_runtime_params(tool)),
        )

    async def call(
        self,
        call: Mapping[str, Any],
        state: Any,
        config: Mapping[str, Any] | None,
        tools: list[Any],
    ) -> Any:
        """Run tool call ``call`` (``name``, ``args``, ``id``) with the node's ``config``."""
        args = dict(call.get("args") or {})
        if self.runtime_params:
            runtime = _tool_runtime(call, state, config, tools)
            for name in self.runtime_params:
                args[name] = runtime
        tool_call = {"type": "tool_call", "name": call["name"], "args": args, "id": call["id"]}
        return await self.tool.ainvoke(tool_call, dict(config) if config is not None else None)


def _tool_runtime(
    call: Mapping[str, Any], state: Any, config: Mapping[str, Any] | None, tools: list[Any]
) -> ToolRuntimeFields[Any, Any]:
    from flowcore.compat.langgraph._context import running_scope

    scope = running_scope()
    runtime = None if scope is None else scope.runtime()
    return tool_runtime_class()(
        state=state,
        context=getattr(runtime, "context", None),
        config=dict(config or {}),
        stream_writer=getattr(runtime, "stream_writer", None) or (lambda chunk: None),
        tool_call_id=call.get("id"),
        store=getattr(runtime, "store", None),
        tools=tools,
        execution_info=getattr(runtime, "execution_info", None),
        server_info=getattr(runtime, "server_info", None),
    )


def langchain_tool(tool: Any) -> LangChainTool | None:
    """``tool`` wrapped for ``ToolNode`` when it is a LangChain tool, else None.

    Example:
        >>> langchain_tool(len) is None
        True
    """
    module = sys.modules.get("langchain_core.tools")
    if module is None or not isinstance(tool, module.BaseTool):
        return None
    return LangChainTool.of(tool)


def is_langchain_message(value: Any) -> bool:
    """Whether ``value`` is a LangChain message (what a LangChain tool answers with).

    Example:
        >>> is_langchain_message("text")
        False
    """
    module = sys.modules.get("langchain_core.messages")
    return module is not None and isinstance(value, module.BaseMessage)
