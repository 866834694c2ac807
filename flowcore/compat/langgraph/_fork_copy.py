"""``update_state(config, values, as_node="__copy__")``: fork a checkpoint as it is.

The copy is a new checkpoint beside the one ``config`` names: the same
values, the same parent, ``source="fork"`` and the next step number, so a
run from it starts a new branch of the thread's history. ``values`` may be
a list of ``StateUpdate``s (or ``(values, as_node)`` pairs), applied to the
copy as one more superstep: each stands in for a task the copy has
scheduled for its node, so history shows the update as that task's result.

Example:
    >>> # fork = app.update_state(history[3].config, None, as_node="__copy__")
    >>> # app.invoke(None, fork)  # runs the branch
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph._errors import InvalidUpdateError
from flowcore.compat.langgraph._types import StateUpdate

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run
    from flowcore.compat.langgraph._pregel import CompiledStateGraph

__all__ = ["COPY_NODE", "copy_then_update"]

COPY_NODE = "__copy__"
"""The ``as_node`` that asks ``update_state`` for a copy of the checkpoint."""


async def copy_then_update(
    graph: CompiledStateGraph,
    run: Run,
    saved: Any,
    conf: Mapping[str, Any],
    saver: Any,
    updates: Sequence[StateUpdate],
) -> dict[str, Any]:
    """Save the copy of ``saved`` (``run`` holds its state) and apply the updates it carries."""
    if len(updates) > 1:
        raise InvalidUpdateError("Cannot copy checkpoint with multiple updates")
    if saved is None:
        raise InvalidUpdateError("Cannot copy a non-existent checkpoint")
    # Saved as a child of the copied checkpoint's parent: a sibling of it.
    run.saved_config = saved.parent_config
    step = int((saved.metadata or {}).get("step", -1)) + 1
    made = await graph._save_update(run, conf, saver, "fork", step)
    carried = updates[0].values
    if not isinstance(carried, list) or not carried:
        return made
    then: list[StateUpdate] = []
    for item in carried:
        if not isinstance(item, Sequence) or isinstance(item, str | bytes):
            raise InvalidUpdateError(f"Invalid update item: {item!r} when copying checkpoint")
        then.append(StateUpdate(item[0], item[1]))
    return await graph._update_superstep(
        {"configurable": {**dict(conf), **dict(made.get("configurable") or {})}}, then
    )
