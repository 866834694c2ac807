"""LangChain chat models and tools called in a node, streamed as LangGraph streams them.

When a run streams ``messages`` or ``tools``, each node runs with LangChain's
run config (its ``var_child_runnable_config``) carrying a callback handler of
this run, so a chat model or tool the node calls reports to it:

* a chat model's tokens become ``llm_token`` records (the chunk and its
  metadata), each as it arrives; a model that does not stream gives its whole
  message when it ends. The ``messages`` mode shows them and then skips the
  same message in the node's output (by id);
* a tool's start, end and failure become ``tool_event`` records
  (``tool-started``, ``tool-finished``, ``tool-error``), the ``tools`` mode.

Records go to the run whose node made the call, under that run's namespace; a
graph a node runs as a run of its own installs its own handler for its nodes.
Nothing is imported from LangChain unless a node of such a run is called with
``langchain_core`` already loaded.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["LC_KINDS", "enter_node", "leave_node"]

LC_KINDS = frozenset({"llm_token", "tool_event"})
"""The record kinds this bridge makes (see ``_records``)."""

_NOSTREAM = frozenset({"nostream", "langsmith:nostream"})

_bridge_class: type | None = None


def enter_node(run: Any, task: Any) -> Any:
    """Install ``run``'s handler for the node call of ``task``; a token for :func:`leave_node`.

    ``None`` when the run streams neither mode or LangChain is not loaded.

    Example:
        >>> class Run: wants = set()
        >>> enter_node(Run(), None) is None
        True
    """
    if run.wants.isdisjoint(LC_KINDS) or "langchain_core.runnables" not in sys.modules:
        return None
    from langchain_core.runnables.config import var_child_runnable_config

    handler = _bridge()(run, task)
    current = var_child_runnable_config.get() or {}
    config = {**current, "callbacks": [handler]}
    return var_child_runnable_config, var_child_runnable_config.set(config)  # type: ignore[arg-type]


def leave_node(token: Any) -> None:
    """Undo :func:`enter_node` (``None``: it installed nothing)."""
    if token is None:
        return
    var, reset = token
    var.reset(reset)


def _bridge() -> type:
    """The handler class, made once LangChain is loaded."""
    global _bridge_class
    if _bridge_class is None:
        _bridge_class = _make_bridge()
    return _bridge_class


def _make_bridge() -> type:
    from langchain_core.callbacks import BaseCallbackHandler

    handler_base: Any = BaseCallbackHandler
    # A chat model streams its tokens (even from invoke) to a handler of this kind.
    streaming_base: Any = object
    try:
        from langchain_core.tracers._streaming import _StreamingCallbackHandler

        streaming_base = _StreamingCallbackHandler
    except ImportError:  # an older LangChain: it streams to any handler
        pass

    class RunStreamBridge(handler_base, streaming_base):  # type: ignore[misc]
        """One node call's chat models and tools, as records of its run."""

        # Called in the model's own thread, in order: records keep their order.
        run_inline = True

        def __init__(self, run: Any, task: Any) -> None:
            self.run = run
            self.task = task
            self.models: dict[Any, dict[str, Any]] = {}
            self.streamed: set[Any] = set()
            self.tools: dict[Any, str] = {}

        # A model streams its tokens to a handler of this kind (LangChain checks it).
        def tap_output_aiter(self, run_id: Any, output: Any) -> Any:
            return output

        def tap_output_iter(self, run_id: Any, output: Any) -> Any:
            return output

        def _meta(self, extra: dict[str, Any] | None) -> dict[str, Any]:
            task, run = self.task, self.run
            ns = f"{run.ns}|{task.name}:{task.id}".lstrip("|")
            return {
                **(extra or {}),
                "langgraph_step": run.step,
                "langgraph_node": task.name,
                "langgraph_triggers": task.triggers,
                "langgraph_checkpoint_ns": ns,
            }

        def on_chat_model_start(
            self,
            serialized: Any,
            messages: Any,
            *,
            run_id: Any,
            tags: list[str] | None = None,
            metadata: dict[str, Any] | None = None,
            **_: Any,
        ) -> None:
            if tags and not _NOSTREAM.isdisjoint(tags):
                return
            self.models[run_id] = self._meta(metadata)

        def on_llm_new_token(self, token: str, *, chunk: Any = None, run_id: Any, **_: Any) -> None:
            meta = self.models.get(run_id)
            message = getattr(chunk, "message", None)
            if meta is None or message is None:
                return
            self.streamed.add(run_id)
            self._token(message, meta)

        def on_llm_end(self, response: Any, *, run_id: Any, **_: Any) -> None:
            meta = self.models.pop(run_id, None)
            if meta is None or run_id in self.streamed:
                self.streamed.discard(run_id)
                return
            for generations in getattr(response, "generations", None) or ():
                for generation in generations:
                    message = getattr(generation, "message", None)
                    if message is not None:
                        self._token(message, meta)

        def on_llm_error(self, error: BaseException, *, run_id: Any, **_: Any) -> None:
            self.models.pop(run_id, None)
            self.streamed.discard(run_id)

        def _token(self, message: Any, meta: dict[str, Any]) -> None:
            if "llm_token" in self.run.wants:
                self.run.emit("llm_token", (message, meta))

        def on_tool_start(
            self,
            serialized: Any,
            input_str: str,
            *,
            run_id: Any,
            tags: list[str] | None = None,
            inputs: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            if tags and not _NOSTREAM.isdisjoint(tags):
                return
            call_id = str(kwargs.get("tool_call_id") or run_id)
            self.tools[run_id] = call_id
            name = (serialized or {}).get("name") or kwargs.get("name") or ""
            event: dict[str, Any] = {
                "event": "tool-started",
                "tool_call_id": call_id,
                "tool_name": name,
            }
            if inputs is not None:
                event["input"] = inputs
            self._tool(event)

        def on_tool_end(self, output: Any, *, run_id: Any, **_: Any) -> None:
            call_id = self.tools.pop(run_id, None)
            if call_id is not None:
                self._tool({"event": "tool-finished", "tool_call_id": call_id, "output": output})

        def on_tool_error(self, error: BaseException, *, run_id: Any, **_: Any) -> None:
            call_id = self.tools.pop(run_id, None)
            # A paused tool is not a failed one: it runs again on resume.
            if call_id is None or type(error).__name__ in ("GraphInterrupt", "NodeInterrupt"):
                return
            self._tool({"event": "tool-error", "tool_call_id": call_id, "message": str(error)})

        def _tool(self, event: dict[str, Any]) -> None:
            if "tool_event" in self.run.wants:
                self.run.emit("tool_event", event)

    return RunStreamBridge
