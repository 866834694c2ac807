"""The built-in v3 projections of one stream mode each, and the subgraph lifecycle ones.

Each ``*Transformer`` here is native (its projection is an attribute of the
run handle): ``values``, ``updates``, ``custom``, ``checkpoints``, ``debug``
and ``tasks`` pass on the data of the events of their mode at their own scope.
``LifecycleTransformer`` (``run.lifecycle``) and ``SubgraphTransformer``
(``run.subgraphs``) read the ``tasks`` events: a task whose namespace is
deeper than the scope starts a subgraph, its parent's task result ends it.

Example:
    >>> ValuesTransformer().init()["values"].name is None
    True
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Literal, NotRequired

from typing_extensions import TypedDict

from flowcore.compat.langgraph._errors import GraphDrained, GraphInterrupt
from flowcore.compat.langgraph._stream_v3_channel import StreamChannel
from flowcore.compat.langgraph._stream_v3_run import AsyncSubgraphRunStream, SubgraphRunStream
from flowcore.compat.langgraph._stream_v3_types import ProtocolEvent, StreamTransformer

__all__ = [
    "CheckpointsTransformer",
    "CustomTransformer",
    "DebugTransformer",
    "LifecyclePayload",
    "LifecycleTransformer",
    "SubgraphStatus",
    "SubgraphTransformer",
    "TasksTransformer",
    "UpdatesTransformer",
    "ValuesTransformer",
]

_log = logging.getLogger(__name__)

#: Where a subgraph stands.
SubgraphStatus = Literal["started", "completed", "failed", "interrupted", "drained"]


class LifecyclePayload(TypedDict, total=False):
    """One item of ``run.lifecycle``: a subgraph started or ended."""

    event: SubgraphStatus
    namespace: list[str]
    graph_name: NotRequired[str]
    trigger_call_id: NotRequired[str]
    cause: NotRequired[dict[str, Any]]
    error: NotRequired[str]


class _ModeLog(StreamTransformer):
    """Passes on the data of one stream mode's events at this transformer's scope."""

    _native = True
    mode: ClassVar[str] = ""

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[Any] = StreamChannel()
        self._scope_list = list(scope)

    def init(self) -> dict[str, Any]:
        return {self.mode: self._log}

    def _mine(self, event: ProtocolEvent) -> bool:
        return event["method"] == self.mode and event["params"]["namespace"] == self._scope_list

    def process(self, event: ProtocolEvent) -> bool:
        if self._mine(event):
            self._log.push(event["params"]["data"])
        return True


class ValuesTransformer(_ModeLog):
    """``run.values``: the state after each step; also tracks the output and interrupts."""

    mode = "values"
    required_stream_modes = ("values",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._latest: Any = None
        self._interrupted = False
        self._interrupts: list[Any] = []

    @property
    def error(self) -> BaseException | None:
        """What the run failed with, if it did."""
        return self._log._error

    def process(self, event: ProtocolEvent) -> bool:
        if self._mine(event):
            self._latest = event["params"]["data"]
            interrupts = event["params"].get("interrupts", ())
            if interrupts:
                self._interrupted = True
                self._interrupts.extend(interrupts)
            self._log.push(event["params"]["data"])
        return True


class CustomTransformer(_ModeLog):
    """``run.custom``: what nodes wrote with the stream writer."""

    mode = "custom"
    required_stream_modes = ("custom",)


class UpdatesTransformer(_ModeLog):
    """``run.updates``: each node's update."""

    mode = "updates"
    required_stream_modes = ("updates",)


class CheckpointsTransformer(_ModeLog):
    """``run.checkpoints``: each checkpoint saved."""

    mode = "checkpoints"
    required_stream_modes = ("checkpoints",)


class DebugTransformer(_ModeLog):
    """``run.debug``: the debug stream mode's events."""

    mode = "debug"
    required_stream_modes = ("debug",)


class TasksTransformer(_ModeLog):
    """``run.tasks``: task starts and results."""

    mode = "tasks"
    required_stream_modes = ("tasks",)


def _split_segment(segment: str) -> tuple[str, str | None]:
    name, sep, task_id = segment.partition(":")
    return name, (task_id if sep else None)


def _status_of_error(err: BaseException) -> tuple[SubgraphStatus, str | None]:
    if isinstance(err, GraphDrained):
        return "drained", None
    if isinstance(err, GraphInterrupt):
        return "interrupted", None
    return "failed", str(err)


def _status_of_result(data: dict[str, Any]) -> tuple[SubgraphStatus, str | None]:
    if data.get("interrupts"):
        return "interrupted", None
    if data.get("error"):
        return "failed", str(data["error"])
    return "completed", None


class _SubgraphTracker(StreamTransformer):
    """Reads ``tasks`` events to see subgraphs start and end (and drops them from the log)."""

    required_stream_modes = ("tasks",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._seen: set[tuple[str, ...]] = set()
        self._open: dict[tuple[str, ...], str] = {}
        self._tool_calls: dict[str, str] = {}
        self._pending_cause: dict[str, Any] | None = None

    def _tracks(self, ns: tuple[str, ...]) -> bool:
        raise NotImplementedError

    def _on_started(
        self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None
    ) -> None:
        raise NotImplementedError

    def _on_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:
        raise NotImplementedError

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] != "tasks":
            return True
        ns = tuple(event["params"]["namespace"])
        data = event["params"]["data"]
        if "result" in data:
            for child, status, error in self._ended_by(ns, data):
                self._on_terminal(child, status, error)
        else:
            self._note_start(ns, data)
        return False

    def _note_start(self, ns: tuple[str, ...], data: dict[str, Any]) -> None:
        task_id = data.get("id")
        payload = data.get("input")
        call_id: Any = None
        if isinstance(payload, dict) and isinstance(payload.get("tool_call"), dict):
            call_id = payload["tool_call"].get("id")
        elif isinstance(payload, list):
            call_id = next(
                (c["id"] for c in payload if isinstance(c, dict) and isinstance(c.get("id"), str)),
                None,
            )
        if isinstance(task_id, str) and isinstance(call_id, str):
            self._tool_calls[task_id] = call_id
        if not ns or not self._tracks(ns) or ns in self._seen:
            return
        self._seen.add(ns)
        name, trigger = _split_segment(ns[-1])
        agent = (data.get("metadata") or {}).get("lc_agent_name")
        self._pending_cause = None
        if agent is not None and trigger is not None and (call := self._tool_calls.get(trigger)):
            self._pending_cause = {"type": "toolCall", "tool_call_id": str(call)}
        self._on_started(ns, agent if agent is not None else (name or None), trigger)
        if trigger is not None:
            self._open[ns] = trigger

    def _ended_by(
        self, ns: tuple[str, ...], data: dict[str, Any]
    ) -> list[tuple[tuple[str, ...], SubgraphStatus, str | None]]:
        result_id = data.get("id")
        ended: list[tuple[tuple[str, ...], SubgraphStatus, str | None]] = []
        if not result_id:
            return ended
        for child, parent_task in list(self._open.items()):
            if child[:-1] == ns and parent_task == result_id:
                ended.append((child, *_status_of_result(data)))
                del self._open[child]
        return ended

    def finalize(self) -> None:
        for ns in list(self._open):
            self._on_terminal(ns, "completed", None)
        self._open.clear()

    def fail(self, err: BaseException) -> None:
        status, error = _status_of_error(err)
        for ns in list(self._open):
            self._on_terminal(ns, status, error)
        self._open.clear()


class LifecycleTransformer(_SubgraphTracker):
    """``run.lifecycle``: ``started`` / ``completed`` / ``failed`` / ... per subgraph."""

    _native = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._channel: StreamChannel[LifecyclePayload] = StreamChannel("lifecycle")

    def init(self) -> dict[str, Any]:
        return {"lifecycle": self._channel}

    def _tracks(self, ns: tuple[str, ...]) -> bool:
        depth = len(self.scope)
        return len(ns) > depth and ns[:depth] == self.scope

    def _on_started(
        self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None
    ) -> None:
        if trigger_call_id is None:
            return
        payload: LifecyclePayload = {"event": "started", "namespace": list(ns)}
        if graph_name:
            payload["graph_name"] = graph_name
        payload["trigger_call_id"] = trigger_call_id
        if self._pending_cause is not None:
            payload["cause"] = self._pending_cause
        self._channel.push(payload)

    def _on_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:
        payload: LifecyclePayload = {"event": status, "namespace": list(ns)}
        if error is not None:
            payload["error"] = error
        self._channel.push(payload)


_Handle = SubgraphRunStream | AsyncSubgraphRunStream


class SubgraphTransformer(_SubgraphTracker):
    """``run.subgraphs``: a run handle per direct child subgraph, fed its scope's events."""

    _native = True
    supports_sync = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[_Handle] = StreamChannel()
        self._handles: dict[tuple[str, ...], _Handle] = {}
        self._mux: Any = None

    def init(self) -> dict[str, Any]:
        return {"subgraphs": self._log}

    def _on_register(self, mux: Any) -> None:
        self._mux = mux

    def _tracks(self, ns: tuple[str, ...]) -> bool:
        depth = len(self.scope)
        return len(ns) == depth + 1 and ns[:depth] == self.scope

    def _on_started(
        self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None
    ) -> None:
        if self._mux is None:
            return
        try:
            child = self._mux._make_child(ns)
        except RuntimeError:
            return
        cls = AsyncSubgraphRunStream if child.is_async else SubgraphRunStream
        handle = cls(child, path=ns, graph_name=graph_name, trigger_call_id=trigger_call_id)
        self._handles[ns] = handle
        self._log.push(handle)

    def _mark(self, handle: _Handle, status: SubgraphStatus, error: str | None) -> bool:
        if handle._seen_terminal:
            return False
        handle.status = status
        if error is not None and handle.error is None:
            handle.error = error
        handle._seen_terminal = True
        return True

    def _on_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:
        handle = self._handles.get(ns)
        if handle is None or not self._mark(handle, status, error):
            return
        if not handle._mux._events._closed:
            if status == "failed":
                handle._mux.fail(RuntimeError(error or "Subgraph failed"))
            else:
                handle._mux.close()

    async def _aon_terminal(
        self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None
    ) -> None:
        handle = self._handles.get(ns)
        if handle is None or not self._mark(handle, status, error):
            return
        if not handle._mux._events._closed:
            if status == "failed":
                await handle._mux.afail(RuntimeError(error or "Subgraph failed"))
            else:
                await handle._mux.aclose()

    def _handle_for(self, event: ProtocolEvent) -> _Handle | None:
        ns = tuple(event["params"]["namespace"])
        depth = len(self.scope)
        if len(ns) <= depth:
            return None
        handle = self._handles.get(ns[: depth + 1])
        if handle is None or handle._mux._events._closed:
            return None
        return handle

    def process(self, event: ProtocolEvent) -> bool:
        keep = super().process(event)
        handle = self._handle_for(event)
        if handle is not None:
            handle._observe_event(event)
            handle._mux.push(event)
        return keep

    async def aprocess(self, event: ProtocolEvent) -> bool:
        keep = True
        if event["method"] == "tasks":
            keep = False
            ns = tuple(event["params"]["namespace"])
            data = event["params"]["data"]
            if "result" in data:
                for child, status, error in self._ended_by(ns, data):
                    await self._aon_terminal(child, status, error)
            else:
                self._note_start(ns, data)
        handle = self._handle_for(event)
        if handle is not None:
            handle._observe_event(event)
            await handle._mux.apush(event)
        return keep

    def finalize(self) -> None:
        first: BaseException | None = None
        for ns in [*self._open, *self._handles]:
            try:
                self._on_terminal(ns, "completed", None)
            except BaseException as exc:
                first = first or exc
        self._open.clear()
        if first is not None:
            raise first

    async def afinalize(self) -> None:
        first: BaseException | None = None
        for ns in [*self._open, *self._handles]:
            try:
                await self._aon_terminal(ns, "completed", None)
            except BaseException as exc:
                first = first or exc
        self._open.clear()
        if first is not None:
            raise first

    def _fail_handles(self, err: BaseException) -> list[_Handle]:
        status, error = _status_of_error(err)
        self._open.clear()
        live = []
        for handle in self._handles.values():
            self._mark(handle, status, error)
            if not handle._mux._events._closed:
                live.append(handle)
        return live

    def fail(self, err: BaseException) -> None:
        for handle in self._fail_handles(err):
            try:
                handle._mux.fail(err)
            except Exception:
                _log.warning("Could not fail the subgraph stream at %s", handle.path, exc_info=True)

    async def afail(self, err: BaseException) -> None:
        for handle in self._fail_handles(err):
            try:
                await handle._mux.afail(err)
            except Exception:
                _log.warning("Could not fail the subgraph stream at %s", handle.path, exc_info=True)
