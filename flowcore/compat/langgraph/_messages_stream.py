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

A v3 run (``stream_events(version="v3")``) asks for LangChain's streaming
protocol instead (:data:`STREAM_MESSAGES_V2` set in the run's
``configurable``): the handler then also carries LangChain's v2 marker class,
which makes a chat model's ``invoke`` drive its protocol event generator,
and each protocol event (``{"event": "message-start", ...}``) becomes a
``(event, metadata)`` item whose metadata names the model run (``run_id``).
Chunks are not shown then, and a model that streamed is not shown again
when it ends.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from flowcore.compat.langgraph._callbacks import CallbackHandlerBase
from flowcore.compat.langgraph._graph_ns import graph_namespace

__all__ = [
    "STREAM_MESSAGES_V2",
    "messages_stream_handler",
    "wants_protocol_events",
    "without_protocol_handlers",
]

_NOSTREAM = "nostream"

STREAM_MESSAGES_V2 = "__pregel_stream_messages_v2"
"""The ``configurable`` key a v3 run sets to get LangChain's protocol events (LangGraph's name)."""

# LangChain's marker base for handlers that take protocol events (loaded with its chat models).
_MARKER_MODULE = "langchain_core.tracers._streaming"
_MARKER = "_V2StreamingCallbackHandler"


def wants_protocol_events(config: Any, version: str) -> bool:
    """Whether a run streams chat models as LangChain protocol events (a v3 run's v2 parts).

    Example:
        >>> wants_protocol_events({"configurable": {STREAM_MESSAGES_V2: True}}, "v2")
        True
    """
    if version != "v2" or not isinstance(config, Mapping):
        return False
    return bool((config.get("configurable") or {}).get(STREAM_MESSAGES_V2))


def _streams_protocol(handler: Any) -> bool:
    return getattr(type(handler), "streams_protocol", False) is True


def without_protocol_handlers(config: Any) -> Any:
    """``config`` without the protocol-event handlers of an enclosing v3 run.

    A graph streamed with ``stream_mode="messages"`` (not v3) inside a node of a
    v3 run inherits the outer run's callbacks; its chat models must stream
    chunks to it, not protocol events.

    Example:
        >>> without_protocol_handlers({"callbacks": ["h"]})["callbacks"]
        ['h']
    """
    if not isinstance(config, Mapping):
        return config
    callbacks = config.get("callbacks")
    if callbacks is None:
        return config
    if isinstance(callbacks, list | tuple):
        if not any(_streams_protocol(h) for h in callbacks):
            return config
        return {**config, "callbacks": [h for h in callbacks if not _streams_protocol(h)]}
    handlers = getattr(callbacks, "handlers", None)
    inheritable = getattr(callbacks, "inheritable_handlers", None)
    if not isinstance(handlers, list) or not isinstance(inheritable, list):
        return config
    if not any(_streams_protocol(h) for h in (*handlers, *inheritable)):
        return config
    manager = callbacks.copy()  # a LangChain callback manager
    manager.handlers = [h for h in handlers if not _streams_protocol(h)]
    manager.inheritable_handlers = [h for h in inheritable if not _streams_protocol(h)]
    return {**config, "callbacks": manager}


def _protocol_marker() -> type | None:
    """LangChain's v2 marker class, when LangChain's chat models are loaded."""
    module = sys.modules.get(_MARKER_MODULE)
    marker = getattr(module, _MARKER, None) if module is not None else None
    return marker if isinstance(marker, type) else None


def _graph_ns(metadata: Any) -> tuple[str, ...]:
    # A @task call's model runs in its caller's graph (see _graph_ns).
    return graph_namespace(metadata)


def messages_stream_handler(
    emit: Callable[[tuple[str, ...], Any], None],
    seen: set[str],
    *,
    subgraphs: bool,
    protocol: bool = False,
) -> Any:
    """A callback handler that streams chat-model output as ``messages`` items.

    ``emit(ns, (message, metadata))`` gets each item; ``seen`` holds the
    message ids already shown (shared with the node-output projection).
    ``protocol``: stream LangChain protocol events instead of chunks (a v3 run).

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
            # Model runs that streamed protocol events (their end is not shown again).
            self.streamed: set[Any] = set()

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
            if protocol:
                return  # a v3 run shows protocol events, never chunks
            message = getattr(chunk, "message", None)
            if message is not None:
                self._show(run_id, message, once=False)

        def on_stream_event(self, event: Any, *, run_id: Any, **kwargs: Any) -> None:
            entry = self.runs.get(run_id)
            if not protocol or entry is None or not isinstance(event, dict):
                return
            if event.get("event") == "message-start":
                self.streamed.add(run_id)
                if event.get("message_id"):
                    # The node returns the finished message too: shown here already.
                    seen.add(str(event["message_id"]))
            emit(entry[0], (event, {**entry[1], "run_id": str(run_id)}))

        def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
            generations = getattr(response, "generations", None)
            message = None
            if generations and generations[0]:
                message = getattr(generations[0][0], "message", None)
            if message is not None:
                if run_id in self.streamed:
                    if message.id is None:
                        message.id = str(uuid.uuid4())
                    seen.add(message.id)
                else:
                    self._show(run_id, message, once=True)
            self.streamed.discard(run_id)
            self.runs.pop(run_id, None)

        def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
            self.streamed.discard(run_id)
            self.runs.pop(run_id, None)

        def push_message(self, message: Any, metadata: dict[str, Any]) -> None:
            """Show a message a node pushed (see ``_push``), with the node's metadata."""
            ns = _graph_ns(metadata)
            if ns and not subgraphs:
                return
            seen.add(message.id)
            emit(ns, (message, metadata))

    marker = _protocol_marker() if protocol else None
    if marker is None:
        return MessagesStream()
    # LangChain's chat models drive their protocol events only for a handler of its class.
    return type("MessagesProtocolStream", (MessagesStream, marker), {"streams_protocol": True})()
