"""``ToolRuntime`` and LangGraph's ``tools`` stream mode.

A LangChain tool run by ``ToolNode`` may take a ``runtime: ToolRuntime``
parameter: ``ToolNode`` fills it in (state, config, the call's id...) and the
tool can stream partial output with ``runtime.emit_output_delta(chunk)``.

``stream_mode="tools"`` reports each tool call's life as chunks
``{"event": "tool-started" | "tool-output-delta" | "tool-finished" |
"tool-error", "tool_call_id": ..., ...}``. The chunks come from LangChain's
tool callbacks (``on_tool_start``/``on_tool_end``/``on_tool_error``), heard
by :func:`tools_stream_handler`, which ``astream`` adds to the run's
callbacks. A tool that pauses (``interrupt()``) or is drained ends without an
event: it runs again later and reports then.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from flowcore.compat.langgraph._callbacks import CallbackHandlerBase
from flowcore.compat.langgraph._graph_ns import graph_namespace
from flowcore.compat.langgraph._langchain import langchain_loaded, langchain_module

__all__ = ["ToolRuntimeFields", "tool_runtime_class", "tools_stream_handler", "with_handler"]

ContextT = TypeVar("ContextT")
StateT = TypeVar("StateT")

#: The delta writer of the tool call running in this context (None: nobody streams tools).
_TOOL_WRITER: contextvars.ContextVar[Callable[[Any], None] | None] = contextvars.ContextVar(
    "flowcore_compat_tool_writer", default=None
)


@dataclass
class ToolRuntimeFields(Generic[ContextT, StateT]):
    """What ``ToolNode`` hands a tool's ``runtime: ToolRuntime`` parameter.

    ``ToolRuntime`` itself (:func:`tool_runtime_class`) is this class marked
    as a directly injected argument for LangChain's tools; it is built on
    first use, since LangChain's tool module is slow to import.

    Example:
        >>> runtime = ToolRuntimeFields(state={}, context=None, config={}, stream_writer=print,
        ...                             tool_call_id="c1", store=None)
        >>> runtime.emit_output_delta("ignored: no tools stream")
    """

    state: StateT
    context: ContextT
    config: Any
    stream_writer: Callable[[Any], None]
    tool_call_id: str | None
    store: Any
    tools: list[Any] = field(default_factory=list)
    execution_info: Any = None
    server_info: Any = None

    def emit_output_delta(self, delta: Any) -> None:
        """Stream ``delta`` as a ``tool-output-delta`` chunk (nothing when nobody streams tools)."""
        writer = _TOOL_WRITER.get()
        if writer is not None:
            writer(delta)


def tool_runtime_class() -> type[ToolRuntimeFields[Any, Any]]:
    """``ToolRuntime``: :class:`ToolRuntimeFields` that LangChain's tools treat as injected.

    Built when first asked for; if the app has not loaded LangChain by then,
    it is a plain class (no LangChain tool can exist yet to read it).

    Example:
        >>> tool_runtime_class().__name__
        'ToolRuntime'
    """
    return _runtime_class(langchain_loaded())


@functools.cache
def _runtime_class(with_langchain: bool) -> type[ToolRuntimeFields[Any, Any]]:
    bases: tuple[type, ...] = (ToolRuntimeFields,)
    module = langchain_module("tools.base") if with_langchain else None
    if module is not None:
        bases = (ToolRuntimeFields, module._DirectlyInjectedToolArg)
    runtime = type("ToolRuntime", bases, {"__slots__": ()})
    runtime.__module__ = __name__
    return runtime


def _graph_ns(metadata: Any) -> tuple[str, ...]:
    """The namespace of the graph a task runs in (``@task`` calls run in their caller's)."""
    return graph_namespace(metadata)


def tools_stream_handler(
    emit: Callable[[tuple[str, ...], dict[str, Any]], None], *, subgraphs: bool
) -> Any:
    """A LangChain callback handler that turns tool callbacks into ``tools`` chunks.

    ``emit(ns, payload)`` gets each chunk with the namespace of the graph the
    tool ran in; with ``subgraphs=False`` only the top graph's tools report.

    Example:
        >>> # config["callbacks"] = [tools_stream_handler(put, subgraphs=False)]
    """

    class ToolsStream(CallbackHandlerBase):
        run_inline = True

        def __init__(self) -> None:
            # Run id -> (namespace, tool call id, the writer's context token).
            self.calls: dict[Any, tuple[tuple[str, ...], str, contextvars.Token[Any]]] = {}

        def on_tool_start(
            self,
            serialized: Any,
            input_str: str,
            *,
            run_id: Any,
            metadata: Any = None,
            inputs: Any = None,
            **kwargs: Any,
        ) -> None:
            if not metadata:
                return
            ns = _graph_ns(metadata)
            if ns and not subgraphs:
                return
            call_id = str(kwargs.get("tool_call_id") or run_id)
            name = (serialized or {}).get("name") or kwargs.get("name") or ""

            def writer(delta: Any) -> None:
                emit(ns, {"event": "tool-output-delta", "tool_call_id": call_id, "delta": delta})

            self.calls[run_id] = (ns, call_id, _TOOL_WRITER.set(writer))
            payload: dict[str, Any] = {
                "event": "tool-started",
                "tool_call_id": call_id,
                "tool_name": name,
            }
            if inputs is not None:
                payload["input"] = inputs
            emit(ns, payload)

        def _close(self, run_id: Any) -> tuple[tuple[str, ...], str] | None:
            entry = self.calls.pop(run_id, None)
            if entry is None:
                return None
            ns, call_id, token = entry
            try:
                _TOOL_WRITER.reset(token)
            except ValueError:  # ended in another context than it started in
                _TOOL_WRITER.set(None)
            return ns, call_id

        def on_tool_end(self, output: Any, *, run_id: Any, **kwargs: Any) -> None:
            closed = self._close(run_id)
            if closed is not None:
                ns, call_id = closed
                emit(ns, {"event": "tool-finished", "tool_call_id": call_id, "output": output})

        def on_tool_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
            closed = self._close(run_id)
            # A paused or drained call runs again later; a hand-off to a parent is an error here.
            if closed is None or _is_pause(error):
                return
            ns, call_id = closed
            emit(ns, {"event": "tool-error", "tool_call_id": call_id, "message": str(error)})

    return ToolsStream()


def _is_pause(error: BaseException) -> bool:
    from flowcore.compat.langgraph._errors import GraphDrained, GraphInterrupt

    return isinstance(error, GraphInterrupt | GraphDrained)


def with_handler(config: Mapping[str, Any] | None, handler: Any) -> dict[str, Any]:
    """``config`` with LangChain callback ``handler`` added to its ``callbacks``.

    Example:
        >>> with_handler({"callbacks": ["a"]}, "b")["callbacks"]
        ['a', 'b']
    """
    merged = dict(config or {})
    callbacks = merged.get("callbacks")
    if callbacks is None:
        merged["callbacks"] = [handler]
    elif isinstance(callbacks, list | tuple):
        merged["callbacks"] = [*callbacks, handler]
    else:  # a LangChain callback manager
        callbacks = callbacks.copy()
        callbacks.add_handler(handler, inherit=True)
        merged["callbacks"] = callbacks
    return merged
