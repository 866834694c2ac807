"""What went into and came out of each node of a run, read from its thread's checkpoints.

The run detail has a node's outputs once the run has ended (from the run
history); while the run goes on, and for a node's inputs, the viewer reads
the thread: each checkpoint holds the updates its superstep's nodes wrote
(their outputs), and the state at the checkpoint before is what those nodes
read (their inputs). A node finished in a superstep that is not
checkpointed yet has a pending write; a node that ran several times shows
its latest run. Values pass through the server's redactor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from flowcore.graph.compiled import CompiledGraph
from flowcore.port.events import json_safe
from flowcore.secrets import Redactor

__all__ = ["NodeIO", "RunNodeIO", "thread_node_io"]

HISTORY_LIMIT = 500
"""Checkpoints read per request: a long thread shows the nodes of its latest ones."""


class NodeIO(BaseModel):
    """One node's latest run on the thread: the state it read and the update it wrote.

    Example:
        >>> NodeIO(node="draft", step=1, status="completed", outputs={"draft": "Hi"}).outputs
        {'draft': 'Hi'}
    """

    node: str
    step: int
    status: str
    inputs: Any = None
    outputs: Any = None


class RunNodeIO(BaseModel):
    """``GET /api/runs/{run_id}/nodes``: each node's inputs and outputs on the run's thread.

    Example:
        >>> RunNodeIO(run_id="r1", thread_id=None).nodes
        []
    """

    run_id: str
    thread_id: str | None
    nodes: list[NodeIO] = Field(default_factory=list)


async def thread_node_io(
    graph: Any, thread_id: str | None, redactor: Redactor, *, limit: int = HISTORY_LIMIT
) -> list[NodeIO]:
    """Each node's latest inputs and outputs on ``thread_id`` (empty without checkpoints).

    Example:
        >>> # [n.node for n in await thread_node_io(compiled, "t1", NO_REDACTION)]
        >>> # ["draft", "approve"]
    """
    if thread_id is None or not isinstance(graph, CompiledGraph) or graph.checkpointer is None:
        return []
    saved = await graph.checkpointer.history(thread_id, limit=limit)
    if not saved:
        return []
    snapshots = await graph.get_state_history(thread_id, limit=limit)
    values: dict[str, Mapping[str, Any]] = {s.checkpoint_id: s.values for s in snapshots}

    def safe(value: Any) -> Any:
        return redactor.redact(json_safe(value))

    found: dict[str, NodeIO] = {}
    for checkpoint in reversed(saved):  # oldest first: a later run of a node replaces it
        before = values.get(checkpoint.parent_id or "", {})
        for group in checkpoint.writes:
            for node, update in group:
                found[node] = NodeIO(
                    node=node,
                    step=checkpoint.step,
                    status="completed",
                    inputs=safe(dict(before)),
                    outputs=safe(dict(update)),
                )
    latest = saved[0]
    for write in await graph.checkpointer.get_writes(thread_id, latest.checkpoint_id):
        payload = dict(write.payload)
        found[write.node] = NodeIO(
            node=write.node,
            step=latest.step + 1,
            status=str(payload.get("status", "completed")),
            inputs=safe(dict(values.get(latest.checkpoint_id, {}))),
            outputs=safe(payload.get("update")),
        )
    return list(found.values())
