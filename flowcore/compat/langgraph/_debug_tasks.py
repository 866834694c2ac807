"""The task list of a ``checkpoints`` record, read from the writes its step has so far.

A checkpoint a run makes has no writes yet: each upcoming task shows only its
id, name and (empty) interrupts. A run that resumes from a saved checkpoint
shows that checkpoint again, as LangGraph does, and by then the step's
pending writes tell how far each task got: a task with an error shows it, a
task that finished shows its result, a task that paused shows its questions.

The rules are LangGraph's: a task finished if it recorded an output write
(anything but the control channels); its result is its ``@task`` return value,
or its writes to the graph's output keys folded into one dict.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from flowcore.compat.langgraph._error_handlers import ERROR_SOURCE
from flowcore.compat.langgraph._planner import ERROR, INTERRUPT, NO_WRITES, RESUME, Task
from flowcore.compat.langgraph._savers_records import EXCLUDED_METADATA_KEYS
from flowcore.compat.langgraph._task_result import task_result
from flowcore.compat.langgraph._types import Interrupt

__all__ = [
    "RETURN",
    "TaskStatus",
    "debug_task_entries",
    "debug_task_metadata",
    "map_debug_tasks",
    "read_statuses",
]

RETURN = "__return__"
"""The channel a ``@task`` call's return value is written to."""

_CONTROL = frozenset((ERROR, ERROR_SOURCE, INTERRUPT, RESUME))
_NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"


class TaskStatus:
    """How far one task got, read from the writes recorded for its step.

    Example:
        >>> s = read_statuses([("t1", "a", 1), ("t2", "__error__", "E")])
        >>> s["t1"].finished, s["t2"].finished, s["t2"].error
        (True, False, 'E')
    """

    __slots__ = ("error", "interrupts", "output")

    def __init__(self) -> None:
        self.output: list[tuple[str, Any]] = []
        self.interrupts: list[Interrupt] = []
        self.error: Any = None

    @property
    def finished(self) -> bool:
        """Whether the task recorded an output write (it ran to its end)."""
        return bool(self.output)


def read_statuses(pending: Iterable[tuple[str, str, Any]]) -> dict[str, TaskStatus]:
    """By task id, the status of every task with recorded writes (input writes aside)."""
    found: dict[str, TaskStatus] = {}
    for task_id, chan, value in pending:
        if task_id == _NULL_TASK_ID:
            continue
        status = found.get(task_id)
        if status is None:
            status = found[task_id] = TaskStatus()
        if chan == INTERRUPT:
            items = value if isinstance(value, list | tuple) else [value]
            status.interrupts.extend(i for i in items if isinstance(i, Interrupt))
        elif chan == ERROR:
            if status.error is None:
                status.error = value
        elif chan not in _CONTROL:
            status.output.append((chan, value))
    return found


def _shown(interrupt: Interrupt) -> dict[str, Any]:
    return {
        "value": interrupt.value,
        "id": interrupt.id,
        "response_schema": getattr(interrupt, "response_schema", None),
    }


def _result(status: TaskStatus, output_keys: Sequence[str], root: str | None) -> Any:
    for chan, value in status.output:
        if chan == RETURN:
            return value
    writes = [(c, v) for c, v in status.output if c != NO_WRITES]
    if root is not None:
        folded = task_result(writes, {root})
        return folded.get(root)
    return task_result(writes, set(output_keys))


def debug_task_entries(
    tasks: Sequence[Task],
    pending: Iterable[tuple[str, str, Any]],
    output_keys: Sequence[str],
    *,
    root: str | None = None,
    states: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The ``tasks`` of a ``checkpoints`` payload for ``tasks``, given the step's writes.

    ``root`` names the one output channel of a graph whose output is a single
    value (its result is then that value, not a dict).

    Example:
        >>> t = Task("t1", "a", ("__pregel_pull", "a"), None, ())
        >>> debug_task_entries([t], [("t1", "x", 1)], ["x"])
        [{'id': 't1', 'name': 'a', 'result': {'x': 1}, 'interrupts': (), 'state': None}]
    """
    statuses = read_statuses(pending)
    entries: list[dict[str, Any]] = []
    for task in tasks:
        status = statuses.get(task.id) or TaskStatus()
        state = (states or {}).get(task.id)
        if status.error is not None:
            entries.append(
                {"id": task.id, "name": task.name, "error": status.error, "state": state}
            )
            continue
        interrupts = tuple(_shown(i) for i in status.interrupts)
        result = _result(status, output_keys, root) if status.finished else None
        entry: dict[str, Any] = {"id": task.id, "name": task.name}
        if result:
            entry["result"] = result
        entry["interrupts"] = interrupts
        entry["state"] = state
        entries.append(entry)
    return entries


def debug_task_metadata(
    metadata: Mapping[str, Any] | None, tags: Sequence[str] | None
) -> dict[str, Any] | None:
    """The ``metadata`` a task's ``tasks``/``debug`` record shows (None: none to show).

    The user's metadata of the task's config (the run's and the node's own), without
    LangGraph's bookkeeping keys, with the config's tags (``seq:step`` ones aside)
    under ``tags``.

    Example:
        >>> debug_task_metadata({"team": "a", "thread_id": "t"}, ["x", "seq:step:1"])
        {'team': 'a', 'tags': ['x']}
        >>> debug_task_metadata({"langgraph_node": "n"}, None) is None
        True
    """
    shown = {k: v for k, v in (metadata or {}).items() if k not in EXCLUDED_METADATA_KEYS}
    kept = [t for t in tags or () if not t.startswith("seq:step")]
    if kept:
        shown["tags"] = kept
    return shown or None


# LangSmith's tag for a run it should not show; a task carrying it gets no record.
_HIDDEN = "langsmith:hidden"


def map_debug_tasks(tasks: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """The ``task`` payloads ``debug``/``tasks`` streams show for ``tasks``, as LangGraph's.

    Each task is anything with ``id``, ``name``, ``input``, ``triggers`` and a
    ``config`` (or None): its payload holds those four fields and, when there is
    any, the user's metadata of its config (see :func:`debug_task_metadata`), a
    copy. A task whose config is tagged hidden for LangSmith is skipped.

    Example:
        >>> class T:
        ...     id, name, input, triggers = "t1", "tools", [], ["x"]
        ...     config = {"metadata": {"team": "a", "langgraph_step": 1}, "tags": ["seq:step:1"]}
        >>> list(map_debug_tasks([T()]))
        [{'id': 't1', 'name': 'tools', 'input': [], 'triggers': ['x'], 'metadata': {'team': 'a'}}]
    """
    for task in tasks:
        config = task.config
        if config is not None and _HIDDEN in (config.get("tags") or ()):
            continue
        payload: dict[str, Any] = {
            "id": task.id,
            "name": task.name,
            "input": task.input,
            "triggers": task.triggers,
        }
        if config is not None:
            metadata = debug_task_metadata(config.get("metadata"), config.get("tags"))
            if metadata is not None:
                payload["metadata"] = metadata
        yield payload
