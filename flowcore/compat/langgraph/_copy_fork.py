"""``update_state(config, values, as_node="__copy__")``: a copy of a checkpoint, as a fork.

The copy holds the checkpoint's values and upcoming tasks but none of its
pending writes (so its tasks run again and its questions are asked again). It
is stored beside the copied checkpoint, under the same parent, with source
``"fork"`` and the next step. ``values`` may list ``(values, as_node)`` pairs:
they are then applied to the copy as one more superstep, each standing in for
a task the copy has scheduled for its node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowcore.compat.langgraph._errors import InvalidUpdateError
from flowcore.compat.langgraph._types import StateUpdate

__all__ = ["COPY", "copy_checkpoint_update"]

COPY = "__copy__"
"""The ``as_node`` that asks for a copy of the addressed checkpoint."""


async def copy_checkpoint_update(
    graph: Any,
    run: Any,
    saved: Any,
    config: Mapping[str, Any],
    saver: Any,
    updates: Sequence[StateUpdate],
) -> dict[str, Any]:
    """Store the copy of ``saved`` ``run`` holds and apply the updates ``updates`` carry.

    ``graph`` is the compiled graph whose checkpoint is copied and ``run`` the
    run its update built over ``saved``; returns the config of the last
    checkpoint made.

    Raises:
        InvalidUpdateError: more than one update, no checkpoint to copy, or a
            listed update that is not a ``(values, as_node)`` pair.
    """
    if len(updates) > 1:
        raise InvalidUpdateError("Cannot copy checkpoint with multiple updates")
    if saved is None:
        raise InvalidUpdateError("Cannot copy a non-existent checkpoint")
    conf = dict(config.get("configurable") or {})
    step = int((saved.metadata or {}).get("step", -1))
    # Stored where the copied checkpoint was: under its parent (or as a thread's first).
    run.saved_config = saved.parent_config
    made: dict[str, Any] = await graph._save_update(run, conf, saver, "fork", step + 1)
    values = updates[0].values
    if not (isinstance(values, list) and values):
        return made
    then: list[StateUpdate] = []
    for item in values:
        if isinstance(item, str) or not isinstance(item, Sequence) or len(item) < 2:
            raise InvalidUpdateError(f"Invalid update item: {item} when copying checkpoint")
        then.append(StateUpdate(item[0], item[1]))
    follow = {**dict(config), "configurable": {**conf, **made["configurable"]}}
    result: dict[str, Any] = await graph._update_superstep(follow, then, saver)
    return result
