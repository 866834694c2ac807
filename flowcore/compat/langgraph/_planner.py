"""The LangGraph planner's decisions: which tasks a superstep runs, how its writes fold in.

The compat run loop (:class:`flowcore.compat.langgraph._loop.Run`) runs
tasks, saves and streams; what it asks here does no I/O and starts nothing.
Every input is explicit: the compiled graph, its channels, the checkpoint
dict (``channel_versions`` and ``versions_seen``), the step numbers and the
bookkeeping the previous fold returned.

* :func:`plan_tasks` — the tasks of the next superstep: one per ``Send`` of
  the last superstep (in the order sent), then every node one of whose
  trigger channels holds a value at a version newer than the node has seen;
* :func:`fold_writes` — a superstep's writes applied to the channels in
  task-path order (never finish order), one new version for everything it
  changed, triggers consumed, one-step channels cleared, deferred channels
  finished when nothing else is due;
* :func:`should_interrupt` — whether ``interrupt_before``/``interrupt_after``
  pause at this superstep.

The native planner's counterpart is :mod:`flowcore.scheduler.planner`.
"""

from __future__ import annotations

import functools
import hashlib
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from flowcore.compat.langgraph._channels import MISSING, Channel
from flowcore.compat.langgraph._error_handlers import ERROR_SOURCE
from flowcore.compat.langgraph._errors import InvalidUpdateError
from flowcore.compat.langgraph._loop_helpers import new_checkpoint_id
from flowcore.compat.langgraph._node import TASKS
from flowcore.compat.langgraph._types import START, Interrupt

if TYPE_CHECKING:
    from flowcore.compat.langgraph._pregel import CompiledStateGraph
    from flowcore.runtime.usage import UsageMeter

__all__ = [
    "ERROR",
    "INTERRUPT",
    "NO_WRITES",
    "PULL",
    "PUSH",
    "RESUME",
    "Folded",
    "IdClock",
    "Task",
    "fold_writes",
    "plan_tasks",
    "should_interrupt",
    "shown_path",
]

INTERRUPT = "__interrupt__"
RESUME = "__resume__"
ERROR = "__error__"
NO_WRITES = "__no_writes__"
PULL = "__pregel_pull"
PUSH = "__pregel_push"
# Writes a task records for the loop (pauses, answers, failures), never folded into channels.
_SPECIAL = frozenset({INTERRUPT, RESUME, ERROR, NO_WRITES, ERROR_SOURCE})
_NO_VERSIONS: Mapping[str, Any] = {}
_SORT_KEY = operator.attrgetter("sort_key")


class IdClock(Protocol):
    """Who remembers the newest checkpoint id a run made (the run itself)."""

    last_checkpoint_id: str | None


def _new_checkpoint_id(after: str | None) -> str:
    # Looked up at each call, so a test that fixes the ids patches this module's name.
    return new_checkpoint_id(after)


def _task_id(checkpoint_id: str, ns: str, step: int, name: str, path: Sequence[Any]) -> str:
    if len(path) == 2 and type(path[0]) is str and type(path[1]) is str and type(step) is int:
        # A pull task's path: the same text as the join below, in one format call.
        text = f"{checkpoint_id}|{ns}|{step}|{name}|{path[0]}|{path[1]}"
    else:
        text = "|".join([checkpoint_id, ns, str(step), name, *map(str, path)])
    d = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    return f"{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:]}"


def shown_path(path: tuple[Any, ...]) -> tuple[Any, ...]:
    """A task's path as LangGraph shows it (snapshots, ``langgraph_path``).

    A ``Send`` task's ``(PUSH, index)`` gets ``False`` appended, LangGraph's mark
    of a pushed task that is not a ``@task`` call; other paths are unchanged.

    Example:
        >>> shown_path((PUSH, 0)), shown_path((PULL, "a"))
        (('__pregel_push', 0, False), ('__pregel_pull', 'a'))
    """
    if len(path) == 2 and path[0] == PUSH:
        return (*path, False)
    return path


def _path_key(path: tuple[Any, ...]) -> str:
    if len(path) == 2 and type(path[0]) is str and type(path[1]) is str:
        # A pull task's path, (PULL, node): the same few at every step, each made once.
        return _two_names_key(path[0], path[1])
    return _make_path_key(path)


def _make_path_key(path: Sequence[Any]) -> str:
    # Zero-padded so that Send number 10 sorts after number 9.
    parts = [f"{p:010d}" if isinstance(p, int) else str(p) for p in path]
    return "~" + ", ".join(parts)


@functools.lru_cache(maxsize=4096)
def _two_names_key(first: str, second: str) -> str:
    return f"~{first}, {second}"


class _UnreadId:
    """The id of a checkpoint that a run without a saver has not needed yet.

    Such a run stores nothing, so only the ids of the tasks that run after a
    checkpoint read its id; it is made when the first of them is read.
    """

    __slots__ = ("checkpoint", "clock")

    def __init__(self, clock: IdClock, checkpoint: dict[str, Any]) -> None:
        self.clock = clock
        self.checkpoint = checkpoint

    def get(self) -> str:
        checkpoint_id: str | None = self.checkpoint["id"]
        if checkpoint_id is None:
            checkpoint_id = _new_checkpoint_id(self.clock.last_checkpoint_id)
            self.checkpoint["id"] = self.clock.last_checkpoint_id = checkpoint_id
        return checkpoint_id


class Task:
    """One node execution in a superstep.

    Its ``id`` is worked out from ``id_from`` (the checkpoint id, or where to get
    it, the namespace and the step) the first time it is read.

    Example:
        >>> task = Task(None, "a", (PULL, "a"), {}, ("branch:to:a",), id_from=("c1", "", 3))
        >>> task.id == Task(None, "a", (PULL, "a"), None, (), id_from=("c1", "", 3)).id
        True
        >>> task.sort_key
        '~__pregel_pull, a'
    """

    __slots__ = (
        "_id",
        "_id_from",
        "_sort_key",
        "attempts",
        "done",
        "error",
        "handled",
        "input",
        "interrupts",
        # Set only when someone reads per-node usage (see RunTasks.run_task): never read
        # it directly, use getattr(task, "meter", None).
        "meter",
        "name",
        "path",
        "paused",
        "resume",
        "timeout",
        "triggers",
        "writes",
    )

    # Unset unless someone reads per-node usage (declared for the type checker).
    meter: UsageMeter | None

    def __init__(
        self,
        id: str | None,
        name: str,
        path: tuple[Any, ...],
        input: Any,
        triggers: tuple[str, ...],
        writes: list[tuple[str, Any]] | None = None,
        *,
        id_from: tuple[str | _UnreadId, str, int] | None = None,
    ) -> None:
        self._id = id
        self._id_from = id_from
        self.name = name
        self.path = path
        self.input = input
        self.triggers = triggers
        self.writes: list[tuple[str, Any]] = [] if writes is None else writes
        self.interrupts: tuple[Interrupt, ...] = ()
        # Paused, with or without questions: a breakpoint of a subgraph asks none.
        self.paused = False
        self.error: BaseException | None = None
        self.done = False
        self.resume: list[Any] = []
        self._sort_key: str | None = None
        # Counted only where a retry policy may call the node more than once.
        self.attempts = 1
        # A Send's own time limits, which replace the node's for this one task.
        self.timeout: Any = None
        # The node's failure once its error handler took over (see _error_handlers).
        self.handled: Any = None

    @property
    def id(self) -> str:
        """The task's id: the same for the same checkpoint, namespace, step, node and path."""
        task_id = self._id
        if task_id is None:
            assert self._id_from is not None
            source, ns, step = self._id_from
            checkpoint_id = source if isinstance(source, str) else source.get()
            task_id = self._id = _task_id(checkpoint_id, ns, step, self.name, self.path)
        return task_id

    @property
    def sort_key(self) -> str:
        """Writes are applied in this order: pull tasks by name, then sends by index."""
        key = self._sort_key
        if key is None:
            key = self._sort_key = _path_key(self.path)
        return key

    def __repr__(self) -> str:
        return f"Task({self.name!r}, {self.path!r})"


def _newer(version: Any, seen: Any) -> bool:
    if version is None:
        return False
    if seen is None:
        return True
    try:
        return bool(version > seen)
    except TypeError:
        # A thread whose versions came from another saver may mix ints and strings.
        return str(version) > str(seen)


def _next_version(current: Any) -> Any:
    if current is None:
        return 1
    if isinstance(current, int):
        return current + 1
    try:
        # LangGraph's savers write "<counter>.<random>": count on from the counter.
        return int(str(current).split(".")[0]) + 1
    except ValueError:
        return 1


def _version_key(version: Any) -> Any:
    if isinstance(version, int | float):
        return (0, version, "")
    return (1, 0, str(version))


def plan_tasks(
    graph: CompiledStateGraph,
    channels: Mapping[str, Channel],
    checkpoint: dict[str, Any],
    clock: IdClock,
    ns: str,
    step: int,
    stop: int,
    changed: set[str] | None,
    for_execution: bool = True,
) -> list[Task]:
    """The tasks of superstep ``step``: Send tasks first, in the order sent, then pull tasks.

    A node is a pull task when one of its trigger channels holds a value whose
    version in ``checkpoint["channel_versions"]`` is newer than the one
    ``checkpoint["versions_seen"][node]`` recorded when it last ran.
    ``changed`` (what the last :func:`fold_writes` changed; None: unknown)
    only narrows which nodes are looked at. Task ids come from the checkpoint
    id, ``ns``, ``step``, the node and the task path; a checkpoint whose id
    is None gets one from ``clock`` when the first id is read. With
    ``for_execution`` each task gets the state its node reads (``step`` and
    ``stop`` fill ``RemainingSteps``/``IsLastStep``); without, its input is None.

    Example:
        >>> # plan_tasks(graph, channels, checkpoint, run, "", 1, 27, None)
        >>> # -> [Task('worker', ('__pregel_push', 0)), Task('a', ('__pregel_pull', 'a'))]
    """
    tasks: list[Task] = []
    ckpt_id = checkpoint["id"]
    id_from = (
        _UnreadId(clock, checkpoint) if ckpt_id is None else str(ckpt_id),
        ns,
        step,
    )
    topic = channels.get(TASKS)
    # The value itself for the usual channel class: no get() call per step.
    sends = MISSING if topic is None else topic.value if topic.plain_read else topic.get()
    if sends is not MISSING:
        for index, send in enumerate(sends):
            if send.node not in graph.nodes:
                raise InvalidUpdateError(f"Invalid node name {send.node} in Send")
            pushed = Task(None, send.node, (PUSH, index), send.arg, (PUSH,), id_from=id_from)
            pushed.timeout = getattr(send, "timeout", None)
            tasks.append(pushed)
    versions = checkpoint["channel_versions"]
    if changed is None:
        candidates: Sequence[str] = graph.node_order
    else:
        # Only a node one of whose triggers changed can have become due.
        candidates = graph.nodes_triggered_by(changed)
    versions_seen = checkpoint["versions_seen"]
    triggers = graph.triggers
    steps = (step, stop)
    # Tasks of one superstep read the same state: read it once per input schema.
    reads: dict[int, Any] = {}
    for name in candidates:
        seen = versions_seen.get(name, _NO_VERSIONS)
        for chan in triggers[name]:
            channel = channels[chan]
            # is_available() and _newer(), without their calls for the usual channel
            # and int versions.
            if channel.value is MISSING if channel.plain_read else not channel.is_available():
                continue
            version = versions.get(chan)
            if version is None:
                continue
            last = seen.get(chan)
            if last is None:
                break
            if type(version) is int and type(last) is int:
                if version > last:
                    break
            elif _newer(version, last):
                break
        else:
            continue
        tasks.append(
            Task(
                None,
                name,
                (PULL, name),
                graph.read_input(name, channels, steps, reads) if for_execution else None,
                tuple(triggers[name]),
                id_from=id_from,
            )
        )
    return tasks


Folded = tuple[set[str], set[str], Any]
"""What :func:`fold_writes` did: ``(updated, changed, top_version)``.

``updated``: the channels that changed and hold a value (what ``values``
streams look at); ``changed``: the channels whose version changed (the next
:func:`plan_tasks` looks only at their nodes); ``top_version``: the newest
channel version after the fold. A plain tuple, not a NamedTuple: it is
made once per superstep on the loop's hot path.
"""


def fold_writes(
    graph: CompiledStateGraph,
    channels: Mapping[str, Channel],
    checkpoint: dict[str, Any],
    tasks: Sequence[Task],
    extra: Sequence[tuple[str, Any]],
    live: set[str],
    top_version: Any,
    next_version: Callable[[Any], Any] | None = None,
) -> Folded:
    """Fold the writes of ``tasks`` (and ``extra``, after them) into ``channels``.

    Writes apply in task-path order (pull tasks by node name, then Send tasks
    by index), whatever order ``tasks`` is in, each channel's values going to
    its reducer together. Each task marks the versions of its triggers as
    seen and consumes them. Every channel that changes gets the same version,
    one above ``top_version`` (or the saver's own ``next_version`` of it).
    When there are tasks (a superstep, not an input or update alone),
    one-step channels in ``live`` that nobody wrote are cleared, and if no
    trigger holds a fresh value the deferred channels finish. ``channels``,
    the checkpoint's version maps and ``live`` (the one-step channels holding
    a value) are updated in place.

    Example:
        >>> # fold_writes(graph, channels, checkpoint, tasks, (), live, 4)
        >>> # -> ({'x'}, {'x', 'branch:to:a'}, 5): updated, changed, top version
    """
    ordered = tasks if len(tasks) < 2 else sorted(tasks, key=_SORT_KEY)
    bump = bool(ordered)
    versions = checkpoint["channel_versions"]
    versions_seen = checkpoint["versions_seen"]
    for task in ordered:
        seen = versions_seen.get(task.name)
        if seen is None:
            seen = versions_seen[task.name] = {}
        for chan in task.triggers:
            if chan in versions:
                seen[chan] = versions[chan]
    if next_version is not None:
        nxt = next_version(top_version)
    else:
        nxt = top_version + 1 if type(top_version) is int else _next_version(top_version)
    changed: set[str] = set()
    consumed = (
        ordered[0].triggers if len(ordered) == 1 else {c for t in ordered for c in t.triggers}
    )
    for chan in consumed:
        channel = channels.get(chan)
        if channel is not None and channel.consume():
            versions[chan] = nxt
            changed.add(chan)
    grouped: dict[str, list[Any]] = {}
    for task in ordered:
        for chan, value in task.writes:
            if chan in _SPECIAL or chan not in channels:
                continue
            found = grouped.get(chan)
            if found is None:
                grouped[chan] = [value]
            else:
                found.append(value)
    for chan, value in extra:
        if chan in channels:
            grouped.setdefault(chan, []).append(value)
    updated: set[str] = set()
    ephemeral = graph.ephemeral_channels
    for chan, values in grouped.items():
        channel = channels[chan]
        if channel.update(values):
            versions[chan] = nxt
            changed.add(chan)
            if channel.value is not MISSING if channel.plain_read else channel.is_available():
                updated.add(chan)
                if chan in ephemeral:
                    live.add(chan)
    if bump:
        # One-step channels not written in this superstep are cleared.
        for chan in live - updated:
            channel = channels[chan]
            if channel.update([]):
                versions[chan] = nxt
                changed.add(chan)
            if channel.is_available():
                updated.add(chan)
            else:
                live.discard(chan)
        if updated.isdisjoint(graph.trigger_channels):
            for chan in graph.finishable_channels:
                channel = channels[chan]
                if channel.finish():
                    versions[chan] = nxt
                    changed.add(chan)
                    if channel.is_available():
                        updated.add(chan)
    return updated, changed, nxt if changed else top_version


def should_interrupt(
    checkpoint: Mapping[str, Any], tasks: Sequence[Task], names: Sequence[str]
) -> bool:
    """Whether to pause before (or after) ``tasks``: one of them is named in ``names``.

    Only when some channel changed since the last pause (the versions seen
    under ``__interrupt__``), so a resumed run does not pause at the same place again.

    Example:
        >>> # should_interrupt(checkpoint, tasks, ("review",)) -> True
    """
    seen = checkpoint["versions_seen"].get(INTERRUPT, _NO_VERSIONS)
    changed = any(_newer(v, seen.get(c)) for c, v in checkpoint["channel_versions"].items())
    return changed and any(t.name in names for t in tasks if t.name != START)
