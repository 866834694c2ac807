"""The Thinker as a flowcore graph: clarify, (ask), decompose, search, create, wire, finish.

Every stage is a node of a native :class:`~flowcore.graph.Graph`, so the
Thinker runs on the engine it feeds: through the executor port, with its
events on the run's stream, checkpointed after every step when compiled
with a checkpointer, and resumable from its thread. A clarifying question
is an ``interrupt()`` in the ``ask`` node (which does nothing else, so a
resume re-runs nothing that costs tokens); the answer is appended to the
conversation and the Clarifier runs again.

State holds only data (blocks are named by id and version, never stored
as objects), so every checkpoint is plain JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.store import BlockStore
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.builder import Graph
from flowcore.graph.compiled import CompiledGraph
from flowcore.graph.constants import END, START
from flowcore.interrupts import interrupt
from flowcore.scheduler.context import NodeContext
from flowcore.search.block_search import BlockSearch
from flowcore.state.reducers import append
from flowcore.thinker.clarifier import clarify_once
from flowcore.thinker.create import create_block
from flowcore.thinker.decompose import decompose, find_blocks
from flowcore.thinker.events import emit
from flowcore.thinker.models import RequiredBlock
from flowcore.thinker.stage import StageFailedError
from flowcore.thinker.wire import wire

__all__ = ["THINKER_GRAPH", "ThinkerDeps", "ThinkerState", "build_thinker_graph"]

THINKER_GRAPH = "thinker"


class ThinkerState(TypedDict, total=False):
    """What the Thinker graph carries from stage to stage (plain JSON).

    Example:
        >>> ThinkerState(intent="Reverse a text", clarify=False)["intent"]
        'Reverse a text'
    """

    intent: str
    clarify: bool
    messages: list[dict[str, str]]
    question: str | None
    ready: bool
    refined_intent: str
    refined: dict[str, Any] | None
    required: list[dict[str, Any]]
    matched: dict[str, dict[str, Any]]
    missing: list[str]
    created: dict[str, dict[str, Any]]
    failed: list[str]
    pipeline: dict[str, Any] | None
    status: str
    log: Annotated[list[str], append]


@dataclass(frozen=True, slots=True)
class ThinkerDeps:
    """What the Thinker's nodes use: the executor, the registry, search, the prompt blocks.

    Example:
        >>> # prompts = await ensure_prompt_blocks(store)
        >>> # deps = ThinkerDeps(executor, store, BlockSearch(store), prompts)
    """

    executor: BlockExecutor
    store: BlockStore
    search: BlockSearch | None
    prompts: Mapping[str, BlockDefinition]


def _ref(block: BlockDefinition) -> dict[str, Any]:
    return {"id": block.id, "version": block.version}


def build_thinker_graph(deps: ThinkerDeps, checkpointer: Checkpointer | None) -> CompiledGraph:
    """The compiled Thinker graph (checkpointed when ``checkpointer`` is given).

    Its input is ``{"intent": str, "clarify": bool, "messages": [...]}``.

    Example:
        >>> # graph = build_thinker_graph(ThinkerDeps(executor, store, search, prompts), saver)
        >>> # result = await graph.run({"intent": "Count words", "clarify": False})
    """

    async def clarify(state: ThinkerState, ctx: NodeContext) -> dict[str, Any]:
        intent = state["intent"]
        messages = state.get("messages") or [{"role": "user", "content": intent}]
        if not state.get("clarify"):
            return {"ready": True, "refined_intent": intent, "messages": messages}
        emit(ctx, "stage", stage="clarify")
        try:
            decision = await clarify_once(deps.executor, deps.prompts["clarify"], messages, ctx)
        except StageFailedError as exc:
            # No usable decision: build from the request as it stands rather than stop.
            return {
                "ready": True,
                "refined_intent": intent,
                "messages": messages,
                "log": [f"clarify: no usable answer ({'; '.join(exc.problems)}); went on"],
            }
        if decision.ready and decision.refined_intent is not None:
            refined = decision.refined_intent
            emit(ctx, "stage_result", stage="clarify", refined_intent=refined.model_dump())
            return {
                "ready": True,
                "question": None,
                "messages": messages,
                "refined": refined.model_dump(),
                "refined_intent": refined.as_text(),
                "log": [f"clarify: ready after {len(messages)} message(s)"],
            }
        question = (decision.question or "").strip()
        emit(ctx, "clarify_question", question=question)
        return {"ready": False, "question": question, "messages": messages}

    def after_clarify(state: ThinkerState) -> Literal["ask", "decompose"]:
        return "decompose" if state.get("ready") else "ask"

    def ask(state: ThinkerState) -> dict[str, Any]:
        # Only the interrupt here: on resume this node re-runs from its start.
        question = state.get("question") or "Could you say more?"
        answer = interrupt({"question": question})
        text = answer if isinstance(answer, str) else str(answer)
        messages = [
            *(state.get("messages") or []),
            {"role": "assistant", "content": question},
            {"role": "user", "content": text.strip() or "(no answer)"},
        ]
        return {"messages": messages}

    async def decompose_node(state: ThinkerState, ctx: NodeContext) -> dict[str, Any]:
        emit(ctx, "stage", stage="decompose")
        try:
            required = await decompose(
                deps.executor, deps.prompts["decompose"], state["refined_intent"], ctx
            )
        except StageFailedError as exc:
            return {"status": "failed", "log": [f"decompose failed: {'; '.join(exc.problems)}"]}
        return {
            "required": [b.model_dump() for b in required],
            "log": [
                f"decompose: {len(required)} block(s): "
                + ", ".join(b.suggested_id for b in required)
            ],
        }

    async def search_node(state: ThinkerState, ctx: NodeContext) -> dict[str, Any]:
        emit(ctx, "stage", stage="search")
        required = [RequiredBlock.model_validate(b) for b in state.get("required") or []]
        found = await find_blocks(required, deps.store, deps.search, ctx)
        return {
            "matched": {k: _ref(b) for k, b in found.matched.items()},
            "missing": [spec.suggested_id for spec in found.missing],
            "log": [f"search: reuse {spec} -> {b.id}" for spec, b in found.matched.items()]
            + [f"search: missing {spec.suggested_id}" for spec in found.missing],
        }

    async def create_node(state: ThinkerState, ctx: NodeContext) -> dict[str, Any]:
        missing = set(state.get("missing") or [])
        specs = [
            RequiredBlock.model_validate(b)
            for b in state.get("required") or []
            if b["suggested_id"] in missing
        ]
        created: dict[str, dict[str, Any]] = {}
        failed: list[str] = []
        log: list[str] = []
        if specs:
            emit(ctx, "stage", stage="create")
        for spec in specs:
            block = await create_block(deps.executor, deps.prompts["create"], spec, deps.store, ctx)
            if block is None:
                failed.append(spec.suggested_id)
                log.append(f"create: {spec.suggested_id} failed its checks and tests; not saved")
            else:
                created[spec.suggested_id] = _ref(block)
                log.append(f"create: {spec.suggested_id} -> {block.id} v{block.version} (tested)")
        update: dict[str, Any] = {"created": created, "failed": failed, "log": log}
        if failed:
            update["status"] = "failed"
        return update

    async def wire_node(state: ThinkerState, ctx: NodeContext) -> dict[str, Any]:
        emit(ctx, "stage", stage="wire")
        chosen = {**(state.get("matched") or {}), **(state.get("created") or {})}
        pairs: list[tuple[RequiredBlock, BlockDefinition]] = []
        for data in state.get("required") or []:
            spec = RequiredBlock.model_validate(data)
            ref = chosen[spec.suggested_id]
            pairs.append((spec, await deps.store.get(ref["id"], ref["version"])))
        try:
            pipeline = await wire(
                deps.executor,
                deps.prompts["wire"],
                state["refined_intent"],
                pairs,
                deps.store,
                ctx,
            )
        except StageFailedError as exc:
            return {"status": "failed", "log": [f"wire failed: {'; '.join(exc.problems)}"]}
        document = pipeline.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        document.setdefault("version", pipeline.version)
        return {
            "pipeline": document,
            "status": "complete",
            "log": [f"wire: pipeline {pipeline.id} with {len(pipeline.nodes)} node(s)"],
        }

    def onward(target: str) -> Any:
        def route(state: ThinkerState) -> str:
            return "finish" if state.get("status") == "failed" else target

        return route

    async def finish(state: ThinkerState, ctx: NodeContext) -> dict[str, Any]:
        status = state.get("status") or "failed"
        result = {
            "pipeline_json": state.get("pipeline"),
            "status": status,
            "log": list(state.get("log") or []),
            "refined_intent": state.get("refined_intent"),
            "reused": sorted(r["id"] for r in (state.get("matched") or {}).values()),
            "created": sorted(r["id"] for r in (state.get("created") or {}).values()),
            "failed": list(state.get("failed") or []),
        }
        emit(ctx, "complete", result=result)
        return {"status": status}

    graph = Graph(ThinkerState, name=THINKER_GRAPH)
    graph.add_node("clarify", clarify).add_node("ask", ask)
    graph.add_node("decompose", decompose_node).add_node("search", search_node)
    graph.add_node("create", create_node).add_node("wire", wire_node)
    graph.add_node("finish", finish)
    graph.add_edge(START, "clarify")
    graph.add_conditional_edges("clarify", after_clarify)
    graph.add_edge("ask", "clarify")
    graph.add_conditional_edges("decompose", onward("search"), ["search", "finish"])
    graph.add_edge("search", "create")
    graph.add_conditional_edges("create", onward("wire"), ["wire", "finish"])
    graph.add_edge("wire", "finish")
    graph.add_edge("finish", END)
    return graph.compile(checkpointer=checkpointer)
