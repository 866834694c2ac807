"""Pieces the compiled graph's modules share.

The topic channel, plain forms of sends and interrupts, LangGraph's chunk
formatting, and the bridge that runs a coroutine from sync code.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import queue
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from flowcore.compat.langgraph._channel_api import is_one_step
from flowcore.compat.langgraph._channels import (
    MISSING,
    BinaryOperatorAggregate,
    Channel,
    EphemeralValue,
    LastValue,
    LastValueAfterFinish,
    NamedBarrierValue,
    clear,
)
from flowcore.compat.langgraph._node import (
    called_from_sync,
)
from flowcore.compat.langgraph._records import (
    CheckpointMade,
    Sink,
    TaskEnd,
    kinds_for_modes,
)
from flowcore.compat.langgraph._subgraph_travel import with_checkpoint_map
from flowcore.compat.langgraph._task_result import task_result
from flowcore.compat.langgraph._types import (
    START,
    Command,
    Interrupt,
    Send,
    TimeoutPolicy,
)

DEFAULT_RECURSION_LIMIT = 10007
"""LangGraph 1.2's default number of supersteps (it counts the start step)."""
_UNKNOWN: Any = object()
# How a checkpoint stores a channel, per channel class. LastValue, BinaryOperatorAggregate
# and EphemeralValue keep their value whenever they have one, None included
# (_VALUE_KEPT); with Channel.snapshot, that is their value as it is (_AS_VALUE). Other
# channels are stored when their snapshot is neither MISSING nor None (_SNAPSHOT).
_AS_VALUE, _VALUE_KEPT, _SNAPSHOT = "value", "kept", "snapshot"
_SNAPSHOTS: dict[type, str] = {}
_OWN_RUN_OPTIONS = ("interrupt_before", "interrupt_after", "output_keys", "checkpoint_during")
_INJECTED = frozenset({"config", "writer", "runtime", "store"})
"""The keyword arguments a node may ask for (see call_with_config)."""
# The as_node of an update that acts as a run's input (LangGraph's name for it).
INPUT_NODE = "__input__"
_ONE_STEP = (True, False)
_FINISHABLE = (False, True)
_PLAIN = (False, False)
_INPUT = "__input__"
"""The ``as_node`` of an update that stands for a run's input."""
T = TypeVar("T")


class _Topic(Channel):
    """The ``Send``s written in one superstep, run as tasks in the next."""

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return clear(self)
        self.value = list(values)
        return True

    def snapshot(self) -> Any:
        if self.value is MISSING:
            return MISSING
        return [_send_plain(s) for s in self.value]

    def restore(self, stored: Any) -> None:
        self.value = [_send_from(s) for s in stored] if stored else MISSING


def _interrupt_plain(interrupt: Interrupt) -> dict[str, Any]:
    """An interrupt as a saver stores it (its schema only when it has one)."""
    plain = {"value": interrupt.value, "id": interrupt.id}
    if interrupt.response_schema is not None:
        plain["response_schema"] = interrupt.response_schema
    return plain


def _send_plain(send: Send) -> dict[str, Any]:
    """A Send as plain data (its timeout only when it has one: older saves have none)."""
    plain: dict[str, Any] = {"node": send.node, "arg": _plain(send.arg)}
    limits = getattr(send, "timeout", None)
    if limits is not None:
        plain["timeout"] = [limits.run_timeout, limits.idle_timeout, limits.refresh_on]
    return plain


def _send_from(plain: dict[str, Any]) -> Send:
    """The inverse of :func:`_send_plain`."""
    limits = plain.get("timeout")
    timeout = None if limits is None else TimeoutPolicy(*limits)
    return Send(plain["node"], _unplain(plain["arg"]), timeout=timeout)


def _snapshot_kind(kind: type) -> str:
    if not issubclass(kind, LastValue | BinaryOperatorAggregate | EphemeralValue):
        return _SNAPSHOT
    return _AS_VALUE if kind.snapshot is Channel.snapshot else _VALUE_KEPT


def _role(channel: Channel) -> tuple[bool, bool]:
    """Whether a channel is cleared when a superstep leaves it unwritten, and whether it opens
    when the run would otherwise end."""
    one_step = isinstance(channel, EphemeralValue | _Topic) or is_one_step(channel)
    finishable = isinstance(channel, LastValueAfterFinish) or (
        isinstance(channel, NamedBarrierValue) and channel.deferred
    )
    return (one_step, finishable)


def _plain(arg: Any) -> Any:
    """A Send's argument as savers store it: a Command (or Send) in it as plain data."""
    if isinstance(arg, Send):
        return {"__send__": {"node": arg.node, "arg": _plain(arg.arg)}}
    if isinstance(arg, Command):
        goto = arg.goto
        goto_list = [_plain(g) for g in goto] if isinstance(goto, list | tuple) else _plain(goto)
        return {
            "__command__": {
                "graph": arg.graph,
                "update": arg.update,
                "resume": arg.resume,
                "goto": goto_list,
                # Whether goto was a list, a tuple or one target, to rebuild the same one.
                "goto_seq": type(goto).__name__ if isinstance(goto, list | tuple) else None,
            }
        }
    return arg


def _unplain(arg: Any) -> Any:
    """The inverse of :func:`_plain`."""
    if isinstance(arg, dict) and len(arg) == 1:
        if "__send__" in arg:
            return Send(arg["__send__"]["node"], _unplain(arg["__send__"]["arg"]))
        if "__command__" in arg:
            fields = arg["__command__"]
            seq, goto = fields["goto_seq"], fields["goto"]
            if seq is None:
                goto = _unplain(goto)
            else:
                goto = [_unplain(g) for g in goto]
                goto = tuple(goto) if seq == "tuple" else goto
            return Command(
                graph=fields["graph"], update=fields["update"], resume=fields["resume"], goto=goto
            )
    return arg


def _on_loop(sink: Sink, kind: str) -> Callable[[tuple[str, ...], Any], None]:
    """``kind`` records into ``sink``, handed over to the running loop from worker threads."""
    loop = asyncio.get_running_loop()
    home = threading.get_ident()

    def emit(ns: tuple[str, ...], payload: Any) -> None:
        if threading.get_ident() == home:
            sink(ns, kind, payload)
        else:
            loop.call_soon_threadsafe(sink, ns, kind, payload)

    return emit


def _nobody(ns: tuple[str, ...], kind: str, payload: Any) -> None:
    """The sink of a run made to read or edit a thread: nobody reads its records."""


def _sortable(version: Any) -> tuple[int, Any]:
    return (0, version) if isinstance(version, int | float) else (1, str(version))


class _ChunkFormatter:
    """LangGraph's stream modes as a projection of a run's records (see ``_records``)."""

    def __init__(self, modes: list[str], *, single: bool, subgraphs: bool) -> None:
        self.modes = modes
        self.single = single
        self.subgraphs = subgraphs
        self.seen_messages: set[str] = set()

    def kinds(self) -> set[str]:
        """The record kinds the requested modes are made of (what the run must build)."""
        return kinds_for_modes(self.modes)

    def _wrap(self, ns: tuple[str, ...], mode: str, chunk: Any) -> Any:
        if self.single:
            return (ns, chunk) if self.subgraphs else chunk
        return (ns, mode, chunk) if self.subgraphs else (mode, chunk)

    def _debug(
        self, ns: tuple[str, ...], kind: str, step: int, payload: Any, plain_mode: str
    ) -> list[Any]:
        out: list[Any] = []
        if "debug" in self.modes:
            event = {"step": step, "timestamp": _now(), "type": kind, "payload": payload}
            out.append(self._wrap(ns, "debug", event))
        if plain_mode in self.modes:
            out.append(self._wrap(ns, plain_mode, payload))
        return out

    def format(self, ns: tuple[str, ...], kind: str, payload: Any) -> list[Any]:
        """The chunks one record of the run gives (none for most)."""
        if ns and not self.subgraphs:
            return []
        if kind in ("values", "updates") and kind in self.modes:
            return [self._wrap(ns, kind, payload)]
        if kind == "tools" and "tools" in self.modes:
            return [self._wrap(ns, "tools", payload)]
        if kind == "messages_chunk" and "messages" in self.modes:
            return [self._wrap(ns, "messages", payload)]
        if kind == "custom" and "custom" in self.modes:
            return [self._wrap(ns, "custom", payload.data)]
        if kind == "remote_messages" and "messages" in self.modes:
            # A RemoteGraph node's (message, metadata) pair, as its server streamed it.
            return [self._wrap(ns, "messages", payload)]
        if kind in ("messages_seen", "messages_from"):
            return self._messages(ns, kind, payload)
        if kind == "step_tasks":
            step, tasks, describe = payload
            out: list[Any] = []
            for task in tasks:
                if task.name == START:
                    continue
                payload = {
                    "id": task.id,
                    "name": task.name,
                    "input": task.input,
                    "triggers": task.triggers,
                }
                # The user's metadata and tags of the task's config, as LangGraph adds them.
                metadata = describe(task)
                if metadata is not None:
                    payload["metadata"] = metadata
                out.extend(self._debug(ns, "task", step, payload, "tasks"))
            return out
        if kind == "task_end":
            return self._task_result(ns, payload)
        if kind == "checkpoint":
            return self._checkpoint(ns, payload)
        return []

    def _task_result(self, ns: tuple[str, ...], end: TaskEnd) -> list[Any]:
        # LangGraph reports no result for a task stopped from outside, nor for one
        # that handed a Command to its parent graph.
        if end.outcome in ("cancelled", "parent_command"):
            return []
        task = end.task
        keys = set(end.output_keys)
        payload = {
            "id": task.id,
            "name": task.name,
            # The exception itself, as LangGraph streams it (str() gives its message).
            "error": task.error if end.outcome == "error" else None,
            "result": task_result(task.writes, keys),
            "interrupts": [
                {
                    "value": i.value,
                    "id": i.id,
                    "response_schema": getattr(i, "response_schema", None),
                }
                for i in task.interrupts
            ],
        }
        return self._debug(ns, "task_result", end.step, payload, "tasks")

    def _checkpoint(self, ns: tuple[str, ...], made: CheckpointMade) -> list[Any]:
        payload = {
            # LangGraph's configs here carry the checkpoint map the metadata implies.
            "config": with_checkpoint_map(made.config, made.metadata),
            "parent_config": with_checkpoint_map(made.parent_config, made.metadata),
            "values": made.values,
            "metadata": made.metadata,
            "next": [t.name for t in made.upcoming],
            "tasks": list(made.task_entries)
            if made.task_entries is not None
            else [
                {
                    "id": t.id,
                    "name": t.name,
                    "interrupts": (),
                    "state": (made.task_states or {}).get(t.id),
                }
                for t in made.upcoming
            ],
        }
        return self._debug(ns, "checkpoint", made.step, payload, "checkpoints")

    def _messages(self, ns: tuple[str, ...], kind: str, payload: Any) -> list[Any]:
        if kind == "messages_seen":
            self.seen_messages.update(m.id for m in _messages_in(payload) if m.id)
            return []
        _, result, meta = payload
        fresh = []
        # Like LangGraph, a message is streamed once, where it first shows.
        for message in _messages_in(result):
            if message.id and message.id in self.seen_messages:
                continue
            if message.id:
                self.seen_messages.add(message.id)
            fresh.append(message)
        if "messages" not in self.modes:
            return []
        return [self._wrap(ns, "messages", (message, meta)) for message in fresh]


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _messages_in(result: Any) -> list[Any]:
    """The messages a node's result holds: in its update, its ``Command``'s, or a list of them."""
    if isinstance(result, list | tuple) and any(isinstance(r, Command) for r in result):
        return [m for part in result for m in _messages_in(part)]
    if isinstance(result, Command):
        result = result.update
    found: list[Any] = []
    values: list[Any] = []
    if isinstance(result, Command):
        # A Command's state update carries the node's messages.
        return _messages_in(result.update)
    if isinstance(result, list | tuple) and any(isinstance(r, Command) for r in result):
        return [m for item in result for m in _messages_in(item)]
    if isinstance(result, dict):
        values = list(result.values())
    elif isinstance(result, BaseModel) and not _is_message(result):
        # A pydantic state (a node's input, or a model it returns): its fields, as LangGraph.
        values = [getattr(result, name) for name in type(result).model_fields]
    elif dataclasses.is_dataclass(result) and not isinstance(result, type):
        values = [getattr(result, f.name) for f in dataclasses.fields(result)]
    for value in values:
        items = value if isinstance(value, list) else [value]
        for item in items:
            if hasattr(item, "type") and hasattr(item, "content") and not isinstance(item, dict):
                found.append(item)
    return found


def _is_message(value: Any) -> bool:
    return hasattr(value, "type") and hasattr(value, "content")


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _sync_call(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code (in a helper thread inside a running loop)."""
    if not _in_running_loop():
        return asyncio.run(called_from_sync(make()))
    box: dict[str, Any] = {}

    def target() -> None:  # a fresh loop of its own, beside the caller's
        try:
            box["value"] = asyncio.run(called_from_sync(make()))
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="flowcore-compat-sync")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def _sync_iter(make: Callable[[], AsyncIterator[Any]]) -> Iterator[Any]:
    """Iterate an async iterator from sync code, on an event loop in a helper thread."""
    items: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    async def pump() -> None:
        agen = make()
        try:
            async for item in agen:
                while not stop.is_set():
                    try:
                        items.put(("item", item), timeout=0.05)
                        break
                    except queue.Full:
                        await asyncio.sleep(0)
                if stop.is_set():
                    break
        finally:
            await agen.aclose()  # type: ignore[attr-defined]

    def target() -> None:
        try:
            asyncio.run(called_from_sync(pump()))
        except BaseException as exc:
            items.put(("error", exc))
        else:
            items.put(("end", None))

    worker = threading.Thread(target=target, name="flowcore-compat-stream", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = items.get()
            if kind == "item":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        stop.set()
        while worker.is_alive():
            with contextlib.suppress(queue.Empty):
                items.get(timeout=0.05)
        worker.join()
