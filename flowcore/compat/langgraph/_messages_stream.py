"""``stream_mode="messages"`` token by token, from LangChain's chat-model callbacks.

A LangChain chat model called inside a node (with the node's config, or
from its context) reports to the run's callbacks. The handler
:func:`messages_stream_handler` makes, which ``astream`` adds to them for
the ``messages`` mode, hears those reports: each streamed chunk
(``on_llm_new_token``) becomes a ``(chunk, metadata)`` item, and a model
that did not stream gives its whole message when it ends. Its presence makes
LangChain's chat models stream (it has the tap methods of LangChain's
streaming handlers). The message ids it shows are marked seen, so the
node's returned messages (shown by the run's own ``messages`` records) are
not shown twice. Nodes that return messages without a chat model keep
working as before. A model run tagged ``nostream`` is not shown.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from flowcore.compat.langgraph._callbacks import CallbackHandlerBase
from flowcore.compat.langgraph._graph_ns import graph_namespace

__all__ = ["messages_stream_handler", "node_message_metadata"]

_NOSTREAM = "nostream"


def _graph_ns(metadata: Any) -> tuple[str, ...]:
    # A @task call's model runs in its caller's graph (see _graph_ns).
    return graph_namespace(metadata)


def messages_stream_handler(
    emit: Callable[[tuple[str, ...], Any], None], seen: set[str], *, subgraphs: bool
) -> Any:
    """A callback handler that streams chat-model output as ``messages`` items.

    ``emit(ns, (message, metadata))`` gets each item; ``seen`` holds the
    message ids already shown (shared with the node-output projection).

    Example:
        >>> handler = messages_stream_handler(lambda ns, item: None, set(), subgraphs=False)
        >>> handler.run_inline
        True
    """

    class MessagesStream(CallbackHandlerBase):
        run_inline = True

        def __init__(self) -> None:
            # Chat-model run id -> (namespace, metadata shown with its messages).
            self.runs: dict[Any, tuple[tuple[str, ...], dict[str, Any]]] = {}

        def tap_output_aiter(self, run_id: Any, output: AsyncIterator[Any]) -> AsyncIterator[Any]:
            return output

        def tap_output_iter(self, run_id: Any, output: Iterator[Any]) -> Iterator[Any]:
            return output

        def _show(self, run_id: Any, message: Any, *, once: bool) -> None:
            entry = self.runs.get(run_id)
            if entry is None:
                return
            if once and message.id in seen:
                return
            if message.id is None:
                message.id = str(uuid.uuid4())
            seen.add(message.id)
            emit(entry[0], (message, entry[1]))

        def on_chat_model_start(
            self,
            serialized: Any,
            messages: Any,
            *,
            run_id: Any,
            tags: list[str] | None = None,
            metadata: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            if not metadata or "langgraph_node" not in metadata:
                return
            if tags and _NOSTREAM in tags:
                return
            ns = _graph_ns(metadata)
            if ns and not subgraphs:
                return
            shown = dict(metadata)
            kept = [t for t in tags or () if not t.startswith(("seq:step", "graph:step"))]
            if kept:
                shown["tags"] = kept
            self.runs[run_id] = (ns, shown)

        def on_llm_new_token(
            self, token: str, *, chunk: Any = None, run_id: Any, **kwargs: Any
        ) -> None:
            message = getattr(chunk, "message", None)
            if message is not None:
                self._show(run_id, message, once=False)

        def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
            generations = getattr(response, "generations", None)
            if generations and generations[0]:
                message = getattr(generations[0][0], "message", None)
                if message is not None:
                    self._show(run_id, message, once=True)
            self.runs.pop(run_id, None)

        def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
            self.runs.pop(run_id, None)

        def push_message(self, message: Any, metadata: dict[str, Any]) -> None:
            """Show a message a node pushed (see ``_push``), with the node's metadata."""
            ns = _graph_ns(metadata)
            if ns and not subgraphs:
                return
            seen.add(message.id)
            emit(ns, (message, metadata))

    return MessagesStream()


def node_message_metadata(
    run_config: Mapping[str, Any], task_metadata: Mapping[str, Any]
) -> dict[str, Any]:
    """The metadata a message a node returned is streamed with, as LangGraph shows it.

    That of the node's own run: the run's config metadata and its plain
    ``configurable`` values (``thread_id``...), the integration's name, and the
    task's ``langgraph_*`` keys (``task_metadata``).

    Example:
        >>> node_message_metadata({"configurable": {"thread_id": "1"}}, {"langgraph_node": "a"})
        {'thread_id': '1', 'ls_integration': 'langgraph', 'langgraph_node': 'a'}
    """
    found: dict[str, Any] = {
        k: v
        for k, v in dict(run_config.get("configurable") or {}).items()
        if not k.startswith("__") and isinstance(v, str | int | float | bool)
    }
    found.update(run_config.get("metadata") or {})
    found.setdefault("ls_integration", "langgraph")
    found.update(task_metadata)
    return found
