"""``refresh_on="auto"``: LangChain events under a node count as its progress.

A node's ``TimeoutPolicy(idle_timeout=..., refresh_on="auto")`` fails an
attempt that shows no sign of life for ``idle_timeout`` seconds. Under
``"auto"`` (the default), as in LangGraph, any LangChain callback event of a
run the node starts (a chat model's start, each streamed token, a tool's
end) is such a sign: the node's config carries a callback handler that
restarts the attempt's idle clock (``flowcore.runtime.retries.heartbeat``).
Under ``"heartbeat"`` only ``runtime.heartbeat()`` does.

LangChain is never imported by this module unless it is already loaded: a
node that uses no LangChain object has no events to watch.

Example:
    >>> from flowcore.compat.langgraph._types import TimeoutPolicy
    >>> with_idle_progress({"tags": []}, TimeoutPolicy(run_timeout=1))
    {'tags': []}
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from flowcore.compat.langgraph._langchain import langchain_module
from flowcore.runtime.retries import heartbeat

__all__ = ["with_idle_progress"]

_HANDLER_CLASS: Any = None


def with_idle_progress(config: dict[str, Any], timeout: Any) -> dict[str, Any]:
    """``config`` with a progress callback when ``timeout`` restarts its idle clock on events."""
    if (
        timeout is None
        or getattr(timeout, "idle_timeout", None) is None
        or getattr(timeout, "refresh_on", "auto") != "auto"
        or "langchain_core.callbacks" not in sys.modules
    ):
        return config
    runnable_config = langchain_module("runnables.config")
    callbacks = langchain_module("callbacks")
    if runnable_config is None or callbacks is None:
        return config
    handler = _handler_class(callbacks.BaseCallbackHandler)()
    merged: dict[str, Any] = dict(runnable_config.merge_configs(config, {"callbacks": [handler]}))
    return merged


def _touch() -> None:
    """Restart the idle clock of the attempt running on this thread's event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        # Off the run's loop (a worker thread): the clock is not this thread's to move.
        return
    heartbeat()


def _handler_class(base: Any) -> Any:
    """The callback handler class on LangChain's ``base``, made once LangChain is loaded."""
    global _HANDLER_CLASS
    if _HANDLER_CLASS is not None:
        return _HANDLER_CLASS

    class IdleProgressHandler(base):  # type: ignore[misc]
        """Every LangChain event of the node's runs restarts its idle timeout."""

        # Called where the event happens (on the run's loop), not in a thread pool.
        run_inline = True

        def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_llm_new_token(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_chain_end(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_retriever_start(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_retriever_end(self, *args: Any, **kwargs: Any) -> None:
            _touch()

        def on_custom_event(self, *args: Any, **kwargs: Any) -> None:
            _touch()

    _HANDLER_CLASS = IdleProgressHandler
    return _HANDLER_CLASS
