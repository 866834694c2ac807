"""Two questions an update or a resume asks about the checkpoint it addresses.

Whether the thread has moved past it (:func:`moved_past`): then an update's
writes are not stored on it (its other children would read them) and a resume
there reruns the tasks that finished. And what closing its superstep leaves
(:func:`close_superstep`, ``update_state(config, None, as_node=END)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph._error_handlers import ERROR_SOURCE
from flowcore.compat.langgraph._loop_helpers import NULL_TASK_ID
from flowcore.compat.langgraph._planner import ERROR, INTERRUPT, NO_WRITES, RESUME

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run

__all__ = ["close_superstep", "moved_past"]

# What a task records for the loop, never a write to fold in.
_RECORDS = frozenset({INTERRUPT, RESUME, ERROR, NO_WRITES, ERROR_SOURCE})


async def moved_past(saver: Any, conf: Mapping[str, Any], checkpoint_id: Any) -> bool:
    """Whether the thread (and namespace) of ``conf`` has a newer checkpoint than ``checkpoint_id``.

    Example:
        >>> # await moved_past(saver, {"thread_id": "t", "checkpoint_ns": ""}, old_id)
    """
    if saver is None:
        return False
    latest_conf = {k: v for k, v in conf.items() if k != "checkpoint_id"}
    latest = await saver.aget_tuple({"configurable": latest_conf})
    return latest is not None and latest.checkpoint["id"] != checkpoint_id


def close_superstep(run: Run, saved: Any, step: int) -> None:
    """Fold in the superstep of ``saved`` as if its tasks had all ended.

    What the checkpoint holds for it goes in: its Command writes, and the
    writes of the tasks that finished (or that an update stood in for); the
    tasks that did not finish end with no writes.

    Example:
        >>> # close_superstep(run, saver.get_tuple(config), step)
    """
    run.step = step + 1  # task ids depend on the step they run in
    tasks = run.prepare(for_execution=False)
    by_id = {task.id: task for task in tasks}
    null_writes: list[tuple[str, Any]] = []
    for task_id, chan, value in saved.pending_writes or ():
        if chan in _RECORDS:
            continue
        write = (chan, run.graph.decode_write(chan, value))
        if task_id == NULL_TASK_ID:
            null_writes.append(write)
        elif task_id in by_id:
            by_id[task_id].writes.append(write)
    run.apply_writes(tasks, extra=null_writes)
