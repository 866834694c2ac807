"""``run.messages``: one LangChain ``ChatModelStream`` per chat message a node produced.

The ``messages`` stream mode of a compat run reports each new message a node
returns (``(message, metadata)``). This transformer turns every such message
at its scope (not chunks, not tool results) into a finished
``ChatModelStream`` (``AsyncChatModelStream`` on the async lane) whose text,
reasoning and tool calls are LangChain's own reading of the message. It also
routes LangChain's streaming protocol events (``{"event": "message-start",
...}`` payloads, by the ``run_id`` in their metadata) into live streams.

flowcore never imports LangChain: the projection is built with the
``ChatModelStream`` module the caller has loaded (reading ``run.messages`` as
LangChain streams means importing it), and stays empty otherwise. flowcore's
own message classes are handed over as LangChain messages.

Example:
    >>> MessagesTransformer().required_stream_modes
    ('messages',)
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

from flowcore.compat.langgraph._stream_v3_channel import StreamChannel
from flowcore.compat.langgraph._stream_v3_types import ProtocolEvent, StreamTransformer

__all__ = ["MessagesTransformer"]

_STREAMS = "langchain_core.language_models.chat_model_stream"
# Loaded by the streams module, which uses it.
_BRIDGE = "langchain_core.language_models._compat_bridge"


def _langchain_message(payload: Any) -> Any:
    """``payload`` as a LangChain message when it is one of ours (or LangChain's)."""
    from flowcore.compat.langgraph._messages import BaseMessage as Own
    from flowcore.compat.langgraph._messages_langchain import to_langchain

    module = sys.modules.get("langchain_core.messages")
    if module is None:
        return None
    if isinstance(payload, module.BaseMessage):
        return payload
    if isinstance(payload, Own):
        return to_langchain([payload], module)[0]
    return None


class MessagesTransformer(StreamTransformer):
    """The native ``messages`` projection of a v3 run."""

    _native = True
    required_stream_modes = ("messages",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[Any] = StreamChannel()
        self._by_run: dict[str, Any] = {}
        self._ignored_runs: set[str] = set()
        self._pump_fn: Callable[[], bool] | None = None
        self._apump_fn: Callable[[], Awaitable[bool]] | None = None
        self._scope_list = list(scope)

    def init(self) -> dict[str, Any]:
        return {"messages": self._log}

    def _bind_pump(self, fn: Callable[[], bool]) -> None:
        self._pump_fn = fn

    def _bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        self._apump_fn = fn

    def _new_stream(self, streams: Any, *, node: str | None, message_id: str | None) -> Any:
        if self._apump_fn is not None or self._pump_fn is None:
            stream = streams.AsyncChatModelStream(namespace=[], node=node, message_id=message_id)
            if self._apump_fn is not None:
                stream.set_arequest_more(self._apump_fn)
            return stream
        stream = streams.ChatModelStream(namespace=[], node=node, message_id=message_id)
        stream.set_request_more(self._pump_fn)
        return stream

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] != "messages" or event["params"]["namespace"] != self._scope_list:
            return True
        streams = sys.modules.get(_STREAMS)
        if streams is None:
            return True  # LangChain's ChatModelStream is not loaded: nothing to build
        payload, metadata = event["params"]["data"]
        metadata = metadata or {}
        node = metadata.get("langgraph_node")
        if isinstance(payload, dict) and "event" in payload:
            run_id = str(metadata.get("run_id", ""))
            self._route_event(streams, payload, run_id=run_id, node=node)
            return True
        message = _langchain_message(payload)
        if message is None or "Chunk" in type(message).__name__ or message.type == "tool":
            return True
        self._route_whole(streams, message, node=node)
        return True

    def _route_event(
        self, streams: Any, event: dict[str, Any], *, run_id: str, node: str | None
    ) -> None:
        kind = event.get("event")
        if kind == "message-start":
            if event.get("role") == "tool":
                self._ignored_runs.add(run_id)
                return
            message_id = event.get("message_id")
            stream = self._new_stream(
                streams, node=node, message_id=None if message_id is None else str(message_id)
            )
            self._by_run[run_id] = stream
            self._log.push(stream)
            stream.dispatch(event)
        elif run_id in self._ignored_runs:
            if kind == "message-finish":
                self._ignored_runs.discard(run_id)
        elif run_id in self._by_run:
            stream = self._by_run[run_id]
            stream.dispatch(event)
            if kind == "message-finish":
                del self._by_run[run_id]

    def _route_whole(self, streams: Any, message: Any, *, node: str | None) -> None:
        bridge = sys.modules.get(_BRIDGE)
        if bridge is None:
            return
        stream = self._new_stream(streams, node=node, message_id=message.id)
        for event in bridge.message_to_events(message, message_id=message.id):
            stream.dispatch(event)
        self._log.push(stream)

    def finalize(self) -> None:
        self._by_run.clear()
        self._ignored_runs.clear()

    def fail(self, err: BaseException) -> None:
        for stream in list(self._by_run.values()):
            stream.fail(err)
        self._by_run.clear()
        self._ignored_runs.clear()
