"""Response bodies built from what the server keeps: run rows, event logs, history records.

A node's status comes from the run's events as they happen (so a viewer
sees nodes turn done while the run goes on); its outputs and tokens from the
run history once the run has ended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowcore.history import RunRecord
from flowcore.port.events import AiEvent, json_safe
from flowcore.server.models import (
    ExecutionDetail,
    ExecutionNode,
    ExecutionSummary,
    InterruptView,
    NodeView,
    RunDetail,
    RunSummary,
)
from flowcore.server.run_store import RunRow

__all__ = ["execution_detail", "execution_summary", "node_views", "run_detail", "run_summary"]

_STATUS_OF_EVENT = {
    "node_start": "running",
    "node_end": "completed",
    "node_error": "failed",
    "node_skipped": "skipped",
    "interrupt": "interrupted",
}


def run_summary(row: RunRow) -> RunSummary:
    """One run in a list.

    Example:
        >>> # run_summary(row).status
    """
    return RunSummary(
        run_id=row.run_id,
        thread_id=row.thread_id,
        target=row.target_name,
        status=row.status,
        started_at=row.started_at,
        ended_at=row.ended_at,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        continues=row.continues,
        continued_by=row.continued_by,
    )


def node_views(
    events: Sequence[AiEvent],
    record: RunRecord | None,
    declared_inputs: Mapping[str, Any],
) -> list[NodeView]:
    """Each node the run reached, in the order it started, with status, inputs, outputs, tokens.

    Example:
        >>> node_views([], None, {})
        []
    """
    nodes: dict[str, dict[str, Any]] = {}

    def view(name: str) -> dict[str, Any]:
        return nodes.setdefault(
            name,
            {"node": name, "status": "pending", "input_tokens": 0, "output_tokens": 0},
        )

    for event in events:
        if event.namespace:
            continue  # a subgraph's nodes are not nodes of this graph
        name = getattr(event, "node", None)
        if not isinstance(name, str) or not name:
            continue
        status = _STATUS_OF_EVENT.get(event.type)
        if status is not None:
            view(name)["status"] = status
        if event.type == "node_error":
            view(name)["error"] = str(getattr(event, "error", ""))
        elif event.type == "usage_report":
            entry = view(name)
            entry["input_tokens"] += int(getattr(event, "input_tokens", 0))
            entry["output_tokens"] += int(getattr(event, "output_tokens", 0))
    if record is not None:
        for node in record.nodes:
            entry = view(node.node)
            entry["status"] = node.status
            entry["outputs"] = json_safe(node.outputs)
            entry["input_tokens"] = max(entry["input_tokens"], node.input_tokens)
            entry["output_tokens"] = max(entry["output_tokens"], node.output_tokens)
            if node.error:
                entry["error"] = node.error
    for name, entry in nodes.items():
        if name in declared_inputs:
            entry["inputs"] = json_safe(declared_inputs[name])
    return [NodeView(**entry) for entry in nodes.values()]


def run_detail(
    row: RunRow,
    events: Sequence[AiEvent],
    record: RunRecord | None,
    declared_inputs: Mapping[str, Any],
    mermaid: str | None,
) -> RunDetail:
    """One run in full.

    Example:
        >>> # run_detail(row, events, record, {}, "flowchart TD ...")
    """
    return RunDetail(
        **run_summary(row).model_dump(),
        mermaid=mermaid,
        nodes=node_views(events, record, declared_inputs),
        interrupts=[
            InterruptView(
                interrupt_id=str(q.get("interrupt_id")),
                node=str(q.get("node")),
                value=q.get("value"),
            )
            for q in row.interrupts
        ],
        error=row.error,
        output=row.output,
    )


def execution_summary(record: RunRecord) -> ExecutionSummary:
    """One run-history record in a list.

    Example:
        >>> # execution_summary(record).pipeline_id
    """
    return ExecutionSummary(
        run_id=record.run_id,
        pipeline_id=record.pipeline_id,
        pipeline_version=str(record.pipeline_version),
        thread_id=record.thread_id,
        status=record.status,
        started_at=record.started_at,
        duration=record.duration,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        errors=list(record.errors),
    )


def execution_detail(record: RunRecord) -> ExecutionDetail:
    """One run-history record with its nodes and final state.

    Example:
        >>> # execution_detail(record).nodes
    """
    return ExecutionDetail(
        **execution_summary(record).model_dump(),
        nodes=[
            ExecutionNode(
                node=n.node,
                status=n.status,
                duration=n.duration,
                attempts=n.attempts,
                outputs=json_safe(n.outputs),
                error=n.error,
                input_tokens=n.input_tokens,
                output_tokens=n.output_tokens,
            )
            for n in record.nodes
        ],
        final_state=json_safe(record.final_state),
    )
