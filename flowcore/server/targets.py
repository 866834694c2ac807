"""What a run request's ``target`` names, resolved to something the executor runs.

A target is one of ``{"graph": NAME}`` (registered with the server),
``{"pipeline": {...}}`` (a Pipeline document), ``{"pipeline_id": ID}`` (a
saved pipeline) or ``{"plan": {...}}`` (a TaskPlan document). Resolving it
also answers what the run viewer needs: the graph as Mermaid text, each
node's declared inputs, and the thread's saved state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flowcore.errors import FlowcoreError
from flowcore.graph.compiled import CompiledGraph
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan, as_pipeline
from flowcore.pipeline.runner import PipelineRunner
from flowcore.port.inproc import Target
from flowcore.server.pipeline_store import PipelineStore

__all__ = ["ResolvedTarget", "TargetNotFoundError", "ThreadState", "resolve_target"]


class TargetNotFoundError(FlowcoreError, LookupError):
    """A run names a graph or saved pipeline the server does not have.

    Example:
        >>> TargetNotFoundError("no graph 'x'").code
        'target-not-found'
    """

    code = "target-not-found"


@dataclass(frozen=True, slots=True)
class ThreadState:
    """A thread's values at its latest checkpoint, and what runs next.

    Example:
        >>> ThreadState("c1", {"x": 1}, ()).next
        ()
    """

    checkpoint_id: str | None
    values: Mapping[str, Any]
    next: tuple[str, ...]
    waiting: bool = False


@dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """A target ready to run: its name, what the executor gets, and the pipeline behind it.

    Example:
        >>> # resolved = await resolve_target({"graph": "chat"}, graphs=g, pipelines=p, runner=r)
    """

    name: str
    target: Target
    pipeline: Pipeline | None
    checkpointed: bool

    async def compiled(self, runner: PipelineRunner | None) -> Any:
        """The graph object of this target (a pipeline is compiled by ``runner``)."""
        if self.pipeline is not None:
            if runner is None:
                return None
            return await runner.compile(self.pipeline)
        return self.target

    async def mermaid(self, runner: PipelineRunner | None) -> str | None:
        """The graph as Mermaid ``flowchart`` text, or None when it cannot be drawn.

        Example:
            >>> # text = await resolved.mermaid(runner)
        """
        graph = await self.compiled(runner)
        if isinstance(graph, CompiledGraph):
            return graph.to_mermaid()
        draw = getattr(graph, "get_graph", None)
        if draw is None:
            return None
        # A LangGraph-style graph draws itself synchronously; keep that off the loop.
        text = await asyncio.to_thread(lambda: draw().draw_mermaid())
        return text if isinstance(text, str) else None

    def node_inputs(self) -> dict[str, Any]:
        """The declared inputs of each pipeline node (references not yet resolved).

        Example:
            >>> # resolved.node_inputs()["n2"]  -> {"text": "<<n1.summary>>"}
        """
        if self.pipeline is None:
            return {}
        return {node.id: dict(node.inputs) for node in self.pipeline.nodes}

    async def state(self, runner: PipelineRunner | None, thread_id: str) -> ThreadState | None:
        """The thread's saved state, or None when the target keeps no checkpoints.

        Example:
            >>> # snap = await resolved.state(runner, "t1")
        """
        graph = await self.compiled(runner)
        if isinstance(graph, CompiledGraph):
            if graph.checkpointer is None:
                return None
            snap = await graph.get_state(thread_id)
            return ThreadState(
                snap.checkpoint_id, dict(snap.values), tuple(snap.next), bool(snap.interrupts)
            )
        reader = getattr(graph, "aget_state", None)
        if reader is None or getattr(graph, "checkpointer", None) is None:
            return None
        snap = await reader({"configurable": {"thread_id": thread_id}})
        config = getattr(snap, "config", None) or {}
        checkpoint_id = config.get("configurable", {}).get("checkpoint_id")
        values = snap.values if isinstance(snap.values, Mapping) else {"value": snap.values}
        waiting = bool(getattr(snap, "interrupts", ()))
        return ThreadState(checkpoint_id, dict(values), tuple(snap.next), waiting)


def _checkpointed(target: Any, runner: PipelineRunner | None) -> bool:
    if isinstance(target, Pipeline | TaskPlan):
        return runner is not None and runner.checkpointer is not None
    return getattr(target, "checkpointer", None) is not None


async def resolve_target(
    spec: Mapping[str, Any],
    *,
    graphs: Mapping[str, Target],
    pipelines: PipelineStore | None,
    runner: PipelineRunner | None,
) -> ResolvedTarget:
    """Resolve a request's target document.

    Raises:
        TargetNotFoundError: an unknown graph name or pipeline id.
        PipelineError: a pipeline or plan document that does not validate.

    Example:
        >>> # await resolve_target({"pipeline_id": "digest"}, graphs={}, pipelines=store, runner=r)
    """
    if "graph" in spec:
        name = str(spec["graph"])
        found = graphs.get(name)
        if found is None:
            known = ", ".join(sorted(graphs)) or "none"
            raise TargetNotFoundError(
                f"no graph named {name!r} is registered with this server (registered: {known}); "
                "GET /api/graphs lists them, and 'flowcore serve --graphs module:attr' adds some"
            )
        pipeline = as_pipeline(found) if isinstance(found, Pipeline | TaskPlan) else None
        return ResolvedTarget(name, found, pipeline, _checkpointed(found, runner))
    if "pipeline_id" in spec:
        pipeline_id = str(spec["pipeline_id"])
        saved = None if pipelines is None else await pipelines.get(pipeline_id)
        if saved is None:
            raise TargetNotFoundError(
                f"no saved pipeline {pipeline_id!r}; GET /api/pipelines lists them and "
                "POST /api/pipelines saves one"
            )
        return ResolvedTarget(saved.id, saved, saved, _checkpointed(saved, runner))
    if "pipeline" in spec:
        pipeline = Pipeline.from_data(spec["pipeline"])
        return ResolvedTarget(pipeline.id, pipeline, pipeline, _checkpointed(pipeline, runner))
    plan = TaskPlan.from_data(spec["plan"])
    return ResolvedTarget(plan.plan_id, plan, as_pipeline(plan), _checkpointed(plan, runner))
