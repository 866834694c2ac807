"""The one event stream of a compat run: the records a run hands its sink.

A run (:class:`~flowcore.compat.langgraph._loop.Run`) reports everything
that happens as a sequence of records, ``sink(ns, kind, payload)``: ``ns``
is the namespace of the (sub)graph run that made it (``()`` for the top
run; a subgraph's run shares its parent's sink), ``kind`` one of
:data:`KINDS`. What a caller sees is a projection of that sequence:

- LangGraph's stream modes (``astream``'s chunk formatter): ``values``,
  ``updates``, ``custom``, ``messages`` from the messages records,
  ``tasks`` and ``debug`` from ``step_tasks`` and ``task_end``,
  ``checkpoints`` and ``debug`` from ``checkpoint``;
- flowcore's events (:class:`~flowcore.compat.langgraph._events.EventProjector`,
  behind ``run_stream``, the port, the run history): ``task_start``,
  ``task_end``, ``custom`` and ``checkpoint``;
- ``invoke``: the last ``values`` and the pauses in ``updates``.

A run builds a record only if its kind is in ``Run.wants``, the union of
what its consumers read (:func:`kinds_for_modes`, ``EventProjector.KINDS``),
so a plain ``invoke`` builds none but ``values``.

Example:
    >>> sorted(kinds_for_modes(["tasks"]))
    ['step_tasks', 'task_end']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Task

__all__ = [
    "KINDS",
    "CheckpointMade",
    "CustomChunk",
    "Outcome",
    "Sink",
    "TaskEnd",
    "TaskStart",
    "fan_out",
    "kinds_for_modes",
]

Sink = Callable[[tuple[str, ...], str, Any], None]

#: How a task that started ended: returned, raised, paused, stopped from outside,
#: or handed a ``Command`` to a parent graph (an error where there is none).
Outcome = Literal["done", "error", "interrupt", "cancelled", "parent_command"]

#: Every record kind, with its payload:
#: ``values`` (the output keys' values, with ``__interrupt__`` after a pause),
#: ``updates`` (``{node: update}`` or ``{"__interrupt__": interrupts}``),
#: ``custom`` (:class:`CustomChunk`), ``messages_seen`` (a task's input, before
#: it runs), ``messages_from`` (``(task, result, metadata)``, with the node's
#: LangGraph metadata), ``step_tasks``
#: (``(step, tasks, describe)``: a superstep's tasks, restored ones included, before
#: any runs, and what gives a task's metadata as ``tasks`` records show it),
#: ``task_start`` (:class:`TaskStart`), ``task_end`` (:class:`TaskEnd`),
#: ``checkpoint`` (:class:`CheckpointMade`, runs on a thread only),
#: ``model_call`` and ``tool_call`` (a node's model or ToolNode call, see
#: ``_call_records``).
KINDS: frozenset[str] = frozenset(
    {
        "model_call",
        "tool_call",
        "values",
        "updates",
        "custom",
        "messages_seen",
        "messages_from",
        "step_tasks",
        "task_start",
        "task_end",
        "checkpoint",
    }
)

_MODE_KINDS: Mapping[str, frozenset[str]] = {
    "values": frozenset({"values"}),
    "updates": frozenset({"updates"}),
    "custom": frozenset({"custom"}),
    "messages": frozenset({"messages_seen", "messages_from"}),
    "tasks": frozenset({"step_tasks", "task_end"}),
    "checkpoints": frozenset({"checkpoint"}),
    "debug": frozenset({"step_tasks", "task_end", "checkpoint"}),
}


def kinds_for_modes(modes: Iterable[str]) -> set[str]:
    """The record kinds LangGraph's stream ``modes`` are projected from.

    Example:
        >>> sorted(kinds_for_modes(["values", "checkpoints"]))
        ['checkpoint', 'values']
    """
    wanted: set[str] = set()
    for mode in modes:
        wanted |= _MODE_KINDS.get(mode, frozenset())
    return wanted


class CustomChunk(NamedTuple):
    """Node ``node`` wrote ``data`` to its stream writer during superstep ``step``.

    Example:
        >>> CustomChunk("fetch", {"progress": 0.5}, 1).data
        {'progress': 0.5}
    """

    node: str
    data: Any
    step: int


class TaskStart(NamedTuple):
    """Task ``task`` of superstep ``step`` starts running (not sent for restored tasks).

    Example:
        >>> # TaskStart(2, task)
    """

    step: int
    task: Task


class TaskEnd(NamedTuple):
    """A started task ended; ``task`` holds its writes, error, interrupts and attempts.

    ``output_keys`` are the stream keys of the run the task belongs to (what
    LangGraph's ``tasks`` mode shows of its writes).

    Example:
        >>> # TaskEnd(2, task, "done", ["messages"])
    """

    step: int
    task: Task
    outcome: Outcome
    output_keys: Sequence[str]


class CheckpointMade(NamedTuple):
    """A run on a thread made a checkpoint (stored now, or when the run ends under "exit").

    ``parent_id`` is the parent the stored checkpoint names; ``config`` and
    ``parent_config`` are the run's saved configs when it was made (what
    LangGraph's ``checkpoints`` mode shows); ``upcoming`` the tasks it says
    run next; ``values`` the graph's stream keys; ``task_states`` by task id, the
    config of the history each upcoming task's subgraph keeps; ``reloaded``
    marks a saved checkpoint a resumed run shows again, with its tasks'
    progress in ``task_entries``.

    Example:
        >>> # CheckpointMade(1, "t1", "1ef...", None, config, None, metadata, values, tasks)
    """

    step: int
    thread_id: str
    checkpoint_id: str
    parent_id: str | None
    config: Mapping[str, Any]
    parent_config: Mapping[str, Any] | None
    metadata: Mapping[str, Any]
    values: Any
    upcoming: Sequence[Task]
    task_states: Mapping[str, Any] | None = None
    # Set when a resumed run shows the saved checkpoint it starts from (made earlier):
    # each upcoming task as its step's pending writes show it (see _debug_tasks).
    task_entries: Sequence[Mapping[str, Any]] | None = None
    reloaded: bool = False


def fan_out(*sinks: Sink) -> Sink:
    """One sink that hands each record to every one of ``sinks``, in order.

    Example:
        >>> seen: list[str] = []
        >>> both = fan_out(lambda ns, kind, p: seen.append(kind), lambda *r: None)
        >>> both((), "values", {})
        >>> seen
        ['values']
    """

    def sink(ns: tuple[str, ...], kind: str, payload: Any) -> None:
        for each in sinks:
            each(ns, kind, payload)

    return sink
