"""The worker process of ``SubprocessExecutor``: runs one kit graph, writes JSON lines.

Protocol. The parent writes one JSON object (the job) on stdin::

    {"run_id", "target", "input", "caller": {request_id, trace_id, user_id,
     billing_account_id}, "thread_id", "resume": null | {"value": ...},
     "recursion_limit", "checkpoint_path"}

and the worker answers on stdout, one JSON object per line, flushed at once:

1. ``{"ready": {"graph_name", "graph_version"}}``: the target was found (or
   not: an unknown target still reports its name, then fails);
2. ``{"event": <event_to_dict(AiEvent)>}`` for every AiEvent as it happens,
   ending with exactly one ``done``;
3. ``{"final": <RunOutcome as JSON>}``.

The worker rebuilds the target by name with ``build_kit_graphs`` on a
``SqliteCheckpointer`` at ``checkpoint_path`` (so a resume can run in a
fresh worker), drives flowcore's engine through ``CompiledGraph.stream``
and maps engine events to AiEvents itself, on purpose not through
``flowcore.port``'s mapper: the conformance kit checks the contract, not a
shared implementation. Diagnostics go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from typing import Any

from flowcore.checkpoint import SqliteCheckpointer
from flowcore.events import (
    CustomEvent,
    DoneEvent,
    Event,
    InterruptEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    RunStartEvent,
    TextDeltaEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UsageEvent,
)
from flowcore.graph.compiled import CompiledGraph
from flowcore.interrupts import Resume
from flowcore.port.events import (
    AiEvent,
    DataAiEvent,
    DoneAiEvent,
    ErrorAiEvent,
    InterruptAiEvent,
    NodeEndAiEvent,
    NodeErrorAiEvent,
    NodeSkippedAiEvent,
    NodeStartAiEvent,
    RunStartAiEvent,
    TextDeltaAiEvent,
    ToolCallResultAiEvent,
    ToolCallStartAiEvent,
    UsageReportAiEvent,
    event_to_dict,
    json_safe,
)
from flowcore.testing.graphs import build_kit_graphs

__all__ = ["main"]


def _error_text(error: BaseException) -> tuple[str, str]:
    # A node's failure arrives wrapped; report the cause the node raised.
    cause = getattr(error, "cause", None)
    inner = cause if isinstance(cause, BaseException) else error
    return type(inner).__name__, str(inner)


class _Writer:
    """Writes JSON lines to stdout off the event loop, in order."""

    def __init__(self) -> None:
        self._out = sys.stdout

    def _write(self, line: str) -> None:
        self._out.write(line)
        self._out.flush()

    async def send(self, message: Mapping[str, Any]) -> None:
        await asyncio.to_thread(self._write, json.dumps(message) + "\n")


class _Run:
    """One run's correlation, numbering and totals; engine events in, AiEvents out."""

    def __init__(self, job: Mapping[str, Any], graph_name: str, graph_version: str) -> None:
        caller = job["caller"]
        self.job = job
        self.ids = {
            "run_id": job["run_id"],
            "graph_name": graph_name,
            "graph_version": graph_version,
            "request_id": caller["request_id"],
            "trace_id": caller["trace_id"],
        }
        self.seq = 0
        self.started = False
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost: float | None = 0.0

    def _base(self) -> dict[str, Any]:
        fields = dict(self.ids, seq=self.seq)
        self.seq += 1
        return fields

    def start(self) -> AiEvent:
        self.started = True
        return RunStartAiEvent(**self._base(), thread_id=self.job.get("thread_id"))

    def ending(self, status: Any, errors: tuple[BaseException, ...]) -> list[AiEvent]:
        out: list[AiEvent] = []
        if not self.started:
            out.append(self.start())
        for error in errors:
            kind, message = _error_text(error)
            out.append(ErrorAiEvent(**self._base(), error_type=kind, message=message))
        out.append(DoneAiEvent(**self._base(), status=status))
        return out

    def translate(self, event: Event) -> list[AiEvent]:
        if isinstance(event, RunStartEvent):
            return [self.start()]
        if isinstance(event, NodeStartEvent):
            return [NodeStartAiEvent(**self._base(), node=event.node)]
        if isinstance(event, NodeEndEvent):
            return [NodeEndAiEvent(**self._base(), node=event.node, duration=event.duration)]
        if isinstance(event, NodeErrorEvent):
            kind, message = _error_text(event.error)
            return [NodeErrorAiEvent(**self._base(), node=event.node, error=f"{kind}: {message}")]
        if isinstance(event, NodeSkippedEvent):
            return [NodeSkippedAiEvent(**self._base(), node=event.node, reason=event.reason)]
        if isinstance(event, TextDeltaEvent):
            return [
                TextDeltaAiEvent(
                    **self._base(),
                    node=event.node,
                    invocation_id=event.invocation_id,
                    delta=event.text,
                )
            ]
        if isinstance(event, ToolCallStartEvent):
            return [
                ToolCallStartAiEvent(
                    **self._base(),
                    node=event.node,
                    tool_call_id=event.tool_call_id,
                    tool_name=event.tool_name,
                    args=event.args,
                )
            ]
        if isinstance(event, ToolCallResultEvent):
            return [
                ToolCallResultAiEvent(
                    **self._base(),
                    node=event.node,
                    tool_call_id=event.tool_call_id,
                    tool_name=event.tool_name,
                    result=event.result,
                    is_error=event.is_error,
                    error_code=event.error_code,
                    safe_message=event.safe_message,
                )
            ]
        if isinstance(event, UsageEvent):
            self.input_tokens += event.input_tokens
            self.output_tokens += event.output_tokens
            self.cost = (
                None if self.cost is None or event.cost_usd is None else self.cost + event.cost_usd
            )
            return [
                UsageReportAiEvent(
                    **self._base(),
                    node=event.node,
                    invocation_id=event.invocation_id,
                    provider=event.provider,
                    model=event.model,
                    input_tokens=event.input_tokens,
                    output_tokens=event.output_tokens,
                    cost_usd=event.cost_usd,
                    prompt_hash=event.prompt_hash,
                )
            ]
        if isinstance(event, InterruptEvent):
            return [
                InterruptAiEvent(
                    **self._base(),
                    node=event.node,
                    interrupt_id=event.interrupt_id,
                    value=event.value,
                )
            ]
        if isinstance(event, CustomEvent):
            return [DataAiEvent(**self._base(), node=event.node, name=event.name, data=event.data)]
        if isinstance(event, DoneEvent):
            return self.ending(event.status, event.errors)
        return []  # block_*, node_cancelled, checkpoint: not part of the AiEvent vocabulary

    def outcome(
        self,
        status: str,
        *,
        output: Mapping[str, Any] | None = None,
        error: str | None = None,
        interrupts: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        return {
            "run_id": self.ids["run_id"],
            "status": status,
            "output": json_safe(output) if output is not None else None,
            "error": error,
            "interrupts": interrupts or [],
            "thread_id": self.job.get("thread_id"),
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost_usd": self.cost,
            },
        }


async def _execute(graph: CompiledGraph, run: _Run, out: _Writer) -> None:
    job = run.job
    resume = job.get("resume")
    run_input: Any = Resume(resume["value"]) if resume is not None else job.get("input")
    stream = graph.stream(
        run_input,
        run_id=job["run_id"],
        thread_id=job.get("thread_id"),
        recursion_limit=job.get("recursion_limit"),
    )
    async with stream as events:
        async for event in events:
            for ai_event in run.translate(event):
                await out.send({"event": event_to_dict(ai_event)})
    result = await stream.result()
    errors = [_error_text(e) for e in result.errors]
    keeps_state = result.status in ("completed", "interrupted")
    await out.send(
        {
            "final": run.outcome(
                result.status,
                output=result.state if keeps_state else None,
                error=f"{errors[0][0]}: {errors[0][1]}" if errors else None,
                interrupts=[
                    {"interrupt_id": i.id, "node": i.node, "value": json_safe(i.value)}
                    for i in result.interrupts
                ],
            )
        }
    )


async def _fail(run: _Run, out: _Writer, error: BaseException) -> None:
    for ai_event in run.ending("failed", (error,)):
        await out.send({"event": event_to_dict(ai_event)})
    kind, message = _error_text(error)
    await out.send({"final": run.outcome("failed", error=f"{kind}: {message}")})


async def main() -> None:
    """Read the job from stdin, run it, stream its events and outcome to stdout."""
    job = json.loads(await asyncio.to_thread(sys.stdin.read))
    out = _Writer()
    async with SqliteCheckpointer(job["checkpoint_path"]) as store:
        graphs = build_kit_graphs(store)
        graph = graphs.get(job["target"])
        name, version = (graph.name, graph.version) if graph else (str(job["target"]), "")
        await out.send({"ready": {"graph_name": name, "graph_version": version}})
        run = _Run(job, name, version)
        if graph is None:
            known = ", ".join(sorted(graphs))
            await _fail(run, out, LookupError(f"no kit graph named {name!r} (known: {known})"))
            return
        try:
            await _execute(graph, run, out)
        except Exception as exc:  # the run could not start, e.g. an unknown thread
            await _fail(run, out, exc)


if __name__ == "__main__":
    asyncio.run(main())
