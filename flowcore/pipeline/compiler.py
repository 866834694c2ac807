"""Checking a ``Pipeline`` against the block registry and compiling it to an engine graph.

Every problem is found in one pass and reported together: unknown blocks or
versions, edges to unknown nodes, references to unknown nodes, cycles
(including a reference to a node that runs later), required inputs with no
source, type mismatches between an output schema and the input it feeds, and
references written in seed 003's ``{{n1.field}}`` spelling, which would
otherwise reach the block as plain text.
"""

from __future__ import annotations

import graphlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from flowcore._shown import shown
from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.node import add_block
from flowcore.blocks.store import BlockNotFoundError, BlockStore
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.builder import Graph
from flowcore.graph.compiled import CompiledGraph
from flowcore.graph.constants import END, START
from flowcore.memory.manager import MemoryManager
from flowcore.pipeline.model import Pipeline, PipelineError
from flowcore.refs.resolver import Reference, extract_references
from flowcore.scheduler.context import NodeContext
from flowcore.state.reducers import append, merge

__all__ = ["check_pipeline", "compile_pipeline", "load_pipeline_blocks"]

_NAMESPACES = frozenset({"input", "state", "memory", "user"})
# JSON Schema types an output of type A may feed into an input of type B.
_FEEDS = {("integer", "number")}
# Seed 003 wrote references {{n1.field}}; flowcore reads only <<n1.field>>.
_SEED_REFERENCE = re.compile(r"\{\{\s*([A-Za-z][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)+)\s*\}\}")


def _refs(value: Any) -> tuple[Reference, ...]:
    try:
        return extract_references(value)
    except ValueError:
        return ()


def _seed_references(node_id: str, inputs: Mapping[str, Any]) -> list[str]:
    """A problem per ``{{ns.path}}`` in a node's inputs, naming the ``<<ns.path>>`` to write."""
    problems: list[str] = []
    todo: list[tuple[str, Any]] = [(str(key), value) for key, value in inputs.items()]
    while todo:
        where, value = todo.pop()
        if isinstance(value, str):
            for match in _SEED_REFERENCE.finditer(value):
                problems.append(
                    f"node {shown(node_id)}: input {shown(where)} holds {match.group(0)[:80]}, "
                    "seed 003's reference spelling, which flowcore would pass on as plain "
                    f"text; write <<{match.group(1)[:80]}>>"
                )
        elif isinstance(value, Mapping):
            todo.extend((f"{where}.{key}", item) for key, item in value.items())
        elif isinstance(value, list | tuple):
            todo.extend((f"{where}.{i}", item) for i, item in enumerate(value))
    return sorted(problems)


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    if kind is None:
        return set()
    return set(kind) if isinstance(kind, list) else {kind}


async def load_pipeline_blocks(
    pipeline: Pipeline, store: BlockStore
) -> tuple[dict[str, BlockDefinition], list[str]]:
    """The block of each node (pinned version or latest), and a problem per missing one.

    Example:
        >>> # blocks, problems = await load_pipeline_blocks(pipeline, store)
    """
    blocks: dict[str, BlockDefinition] = {}
    problems: list[str] = []
    for node in pipeline.nodes:
        try:
            blocks[node.id] = await store.get(node.block_id, node.block_version)
        except BlockNotFoundError as exc:
            problems.append(f"node {shown(node.id)}: {exc}")
    return blocks, problems


@dataclass(frozen=True, slots=True)
class _Shape:
    """What checking found out about a pipeline's structure, reused by compilation."""

    deps: dict[str, set[str]]
    branches: dict[str, dict[str, str]]
    loops: frozenset[tuple[str, str]]
    data_only: frozenset[tuple[str, str]]


def _branches_of(
    pipeline: Pipeline, blocks: Mapping[str, BlockDefinition]
) -> dict[str, dict[str, str]]:
    chosen: dict[str, dict[str, str]] = {}
    for node in pipeline.nodes:
        block = blocks.get(node.id)
        mapping = (
            node.branches if node.branches is not None else (block.branches if block else None)
        )
        if mapping:
            chosen[node.id] = dict(mapping)
    return chosen


def _reaches(deps: Mapping[str, set[str]], start: str, goal: str) -> bool:
    """Whether ``goal`` is ``start`` or one of its ancestors in ``deps``."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        here = todo.pop()
        if here == goal:
            return True
        if here not in seen:
            seen.add(here)
            todo.extend(deps.get(here, ()))
    return False


def check_pipeline(pipeline: Pipeline, blocks: Mapping[str, BlockDefinition]) -> list[str]:
    """Every problem of ``pipeline`` given the block each node runs (pure; no I/O).

    Example:
        >>> # problems = check_pipeline(pipeline, blocks)
    """
    return _analyse(pipeline, blocks)[0]


def _analyse(
    pipeline: Pipeline, blocks: Mapping[str, BlockDefinition]
) -> tuple[list[str], _Shape | None]:
    problems: list[str] = []
    ids = [n.id for n in pipeline.nodes]
    known = set(ids)
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"node id {shown(dup)} is used more than once; node ids must be unique")
    deps: dict[str, set[str]] = {i: set() for i in ids}
    explicit = {(e.source, e.target) for e in pipeline.edges}
    for edge in pipeline.edges:
        bad = [n for n in (edge.source, edge.target) if n not in known]
        if bad:
            problems.append(
                f"edge {edge.source} -> {edge.target}: unknown node {shown(bad[0])} "
                f"(nodes: {', '.join(ids)})"
            )
        else:
            deps[edge.target].add(edge.source)
    implied: dict[tuple[str, str], str] = {}
    for node in pipeline.nodes:
        problems.extend(_seed_references(node.id, node.inputs))
        for ref in _refs(node.inputs):
            if ref.namespace in _NAMESPACES:
                continue
            if ref.namespace not in known:
                problems.append(
                    f"node {shown(node.id)}: {ref.text} refers to unknown node "
                    f"{shown(ref.namespace)} "
                    f"(nodes: {', '.join(ids)}; or use input., state., memory., user.)"
                )
            elif ref.namespace == node.id:
                problems.append(f"node {shown(node.id)}: {ref.text} refers to the node itself")
            else:
                deps[node.id].add(ref.namespace)
                implied.setdefault((ref.namespace, node.id), ref.text)
    branches = _branches_of(pipeline, blocks)
    for node in pipeline.nodes:
        block = blocks.get(node.id)
        if node.branches is not None and block is not None and block.kind != "decision":
            problems.append(
                f"node {shown(node.id)}: branches only apply to decision blocks, and block "
                f"{shown(block.id)} is a {shown(block.kind)} block; remove them or use a decision "
                "block"
            )
            branches.pop(node.id, None)
    for source, mapping in branches.items():
        for key, target in mapping.items():
            if target not in known:
                problems.append(
                    f"node {shown(source)}: decision branch {shown(key)} leads to unknown node "
                    f"{shown(target)}; name a node of this pipeline (nodes: {', '.join(ids)})"
                )
    # Plain edges and references must form a DAG; only a decision branch may loop back.
    order = _order(deps, implied, problems)
    if order is None:
        return problems, None
    loops: set[tuple[str, str]] = set()
    for source, mapping in branches.items():
        for target in mapping.values():
            if target not in known:
                continue
            if _reaches(deps, source, target):
                loops.add((source, target))
            else:
                deps[target].add(source)
    order = list(graphlib.TopologicalSorter(deps).static_order())
    ancestors: dict[str, set[str]] = {}
    for node_id in order:
        ancestors[node_id] = set().union(*(ancestors[d] | {d} for d in deps[node_id]))
    for node in pipeline.nodes:
        block = blocks.get(node.id)
        if block is not None:
            problems.extend(
                _input_problems(pipeline, node.id, node.inputs, block, blocks, ancestors[node.id])
            )
    data_only = _data_only_references(deps, implied, explicit)
    routed = {(s, t) for s, mapping in branches.items() for t in mapping.values()}
    targets = {t: s for s, t in routed if (s, t) not in loops}
    for source, target in sorted(set(implied) - data_only - explicit - routed):
        if target in targets:
            problems.append(
                f"node {shown(target)} runs only when decision {shown(targets[target])} picks it, "
                "but "
                f"{implied[(source, target)]} reads node {shown(source)}, which is not upstream of "
                f"{shown(targets[target])}; add an edge {source} -> {targets[target]} so the value "
                "is ready, or read it from the shared context"
            )
    return problems, _Shape(deps, branches, frozenset(loops), data_only)


def _data_only_references(
    deps: Mapping[str, set[str]],
    implied: Mapping[tuple[str, str], str],
    explicit: set[tuple[str, str]],
) -> frozenset[tuple[str, str]]:
    """References whose node runs before the reader anyway, so they need no edge of their own.

    Such a reference adds no trigger: a node on a decision branch that reads a
    value produced before the decision still runs only when its branch is taken.
    """
    found: set[tuple[str, str]] = set()
    # Dropped one at a time from a working copy, so what is left always keeps the order.
    remaining = {node: set(sources) for node, sources in deps.items()}
    for source, target in sorted(implied):
        if (source, target) in explicit:
            continue
        remaining[target].discard(source)
        if _reaches(remaining, target, source):
            found.add((source, target))
        else:
            remaining[target].add(source)
    return frozenset(found)


def _stable_order(ids: list[str], deps: Mapping[str, set[str]]) -> list[str]:
    """A topological order that keeps the pipeline's own node order wherever it can."""
    placed: list[str] = []
    done: set[str] = set()
    while len(placed) < len(ids):
        for node_id in ids:
            if node_id not in done and deps[node_id] <= done:
                placed.append(node_id)
                done.add(node_id)
                break
    return placed


def _order(
    deps: dict[str, set[str]], implied: dict[tuple[str, str], str], problems: list[str]
) -> list[str] | None:
    try:
        return list(graphlib.TopologicalSorter(deps).static_order())
    except graphlib.CycleError as exc:
        cycle: list[str] = list(exc.args[1])
        path = " -> ".join(reversed(cycle))
        later = [
            f"{implied[(a, b)]} in node {shown(b)}"
            for a, b in zip(reversed(cycle), list(reversed(cycle))[1:], strict=False)
            if (a, b) in implied
        ]
        why = f" (made by the reference {later[0]}, to a node that runs later)" if later else ""
        problems.append(
            f"the pipeline has a cycle: {path}{why}; edges and references must not form a "
            "cycle (a loop is allowed only through a decision branch that leads back)"
        )
        return None


def _input_problems(
    pipeline: Pipeline,
    node_id: str,
    inputs: Mapping[str, Any],
    block: BlockDefinition,
    blocks: Mapping[str, BlockDefinition],
    upstream: set[str],
) -> list[str]:
    problems: list[str] = []
    props: Mapping[str, Any] = block.input_schema.get("properties") or {}
    offered = set(pipeline.memory_keys)
    for other in upstream:
        if other in blocks:
            offered |= set((blocks[other].output_schema.get("properties") or {}).keys())
    for key in block.input_schema.get("required", []):
        if key not in inputs and key not in offered:
            problems.append(
                f"node {shown(node_id)}: required input {shown(key)} of block {shown(block.id)} "
                "has no source; "
                f'wire it in inputs (e.g. "{key}": "<<input.{key}>>") or produce it upstream'
            )
    for key, value in inputs.items():
        refs = _refs(value)
        if not (isinstance(value, str) and len(refs) == 1 and value.strip() == refs[0].text):
            continue
        ref = refs[0]
        source = blocks.get(ref.namespace)
        if source is None or not ref.path:
            continue
        outs: Mapping[str, Any] = source.output_schema.get("properties") or {}
        field = ref.path[0]
        if outs and field not in outs:
            problems.append(
                f"node {shown(node_id)}: {ref.text} reads output {shown(field)}, which block "
                f"{shown(source.id)} does not produce (outputs: {', '.join(outs)})"
            )
            continue
        if len(ref.path) > 1 or field not in outs or key not in props:
            continue
        have, want = _types(outs[field]), _types(props[key])
        if (
            have
            and want
            and not have & want
            and not any((h, w) in _FEEDS for h in have for w in want)
        ):
            problems.append(
                f"node {shown(node_id)}: input {shown(key)} expects {'/'.join(sorted(want))} but "
                f"{ref.text} is {'/'.join(sorted(have))} (output of block {shown(source.id)})"
            )
    return problems


def _state_schema(pipeline: Pipeline) -> type:
    fields: dict[str, Any] = {
        "results": Annotated[dict[str, Any], merge],
        "shared_context": Annotated[dict[str, Any], merge],
        "block_runs": Annotated[list[dict[str, Any]], append],
        "memory": dict[str, Any],
        "user": dict[str, Any],
    }
    # Run input keys the pipeline reads (<<input.x>>, <<state.x>>) become state keys.
    for node in pipeline.nodes:
        for ref in _refs(node.inputs):
            if ref.namespace in ("input", "state") and ref.path and ref.path[0] not in fields:
                fields[ref.path[0]] = Any
    # A class name cannot hold every character an id may (a NUL is refused by type()).
    name = "PipelineState_" + "".join(c if c.isalnum() else "_" for c in pipeline.id[:80])
    schema: type = TypedDict(name, fields, total=False)  # type: ignore[misc]
    return schema


async def compile_pipeline(
    pipeline: Pipeline,
    store: BlockStore,
    executor: BlockExecutor,
    *,
    memory: MemoryManager | None = None,
    checkpointer: Checkpointer | None = None,
) -> CompiledGraph:
    """Check ``pipeline`` and build its graph: one block node per step plus memory nodes.

    ``load_memory`` runs first: it puts the user's preferences and this
    pipeline's run history into ``state["memory"]`` and the ``memory_keys``
    found in the preferences into the shared context. ``save_memory`` runs
    last: it saves the ``memory_keys`` back as preferences and records a run
    summary. The user is ``config["user_id"]`` of the run. Raises
    :class:`PipelineError` listing every problem.

    Example:
        >>> # graph = await compile_pipeline(pipeline, store, executor, memory=manager)
        >>> # result = await graph.run({"doc": "..."}, config={"user_id": "ada"})
    """
    blocks, problems = await load_pipeline_blocks(pipeline, store)
    found, shape = _analyse(pipeline, blocks)
    problems += found
    if problems or shape is None:
        raise PipelineError(problems, pipeline=pipeline.id)
    graph = Graph(_state_schema(pipeline), name=pipeline.id)
    graph.add_node("load_memory", _load_memory(pipeline, memory))
    graph.add_node("save_memory", _save_memory(pipeline, memory))
    # Declaration order = topological order, so the engine's depth-first walk meets every
    # forward edge first and marks exactly the decision branches that lead back as back edges.
    order = _stable_order([n.id for n in pipeline.nodes], shape.deps)
    by_id = {n.id: n for n in pipeline.nodes}
    for node_id in order:
        node = by_id[node_id]
        add_block(
            graph,
            node.id,
            blocks[node.id],
            executor,
            inputs=node.inputs or None,
            branches=shape.branches.get(node.id),
        )
    routed = {(s, t) for s, mapping in shape.branches.items() for t in mapping.values()}
    has_incoming = {t for s, t in routed if (s, t) not in shape.loops}
    has_outgoing = set(shape.branches)
    for target in order:
        for source in sorted(shape.deps[target]):
            if (source, target) in routed or (source, target) in shape.data_only:
                continue
            graph.add_edge(source, target)
            has_incoming.add(target)
            has_outgoing.add(source)
    graph.add_edge(START, "load_memory")
    for node_id in order:
        if node_id not in has_incoming:
            graph.add_edge("load_memory", node_id)
        if node_id not in has_outgoing:
            graph.add_edge(node_id, "save_memory")
    graph.add_edge("save_memory", END)
    return graph.compile(version=str(pipeline.version), checkpointer=checkpointer)


def _load_memory(pipeline: Pipeline, memory: MemoryManager | None) -> Any:
    async def load_memory(state: Mapping[str, Any], ctx: NodeContext) -> dict[str, Any]:
        user = ctx.config.get("user_id")
        if memory is None or not user:
            return {"memory": {"preferences": {}, "history": []}}
        prefs = await memory.preferences(str(user))
        history = await memory.history(str(user), pipeline.id)
        remembered = {k: prefs[k] for k in pipeline.memory_keys if k in prefs}
        return {
            # The keys are kept with the run: save_memory reads them from the checkpoint
            # after a resume, whoever resumes and with whatever config.
            "memory": {
                "preferences": prefs,
                "history": history,
                "keys": list(pipeline.memory_keys),
            },
            "user": {"id": str(user)},
            "shared_context": remembered,
        }

    return load_memory


def _save_memory(pipeline: Pipeline, memory: MemoryManager | None) -> Any:
    async def save_memory(state: Mapping[str, Any], ctx: NodeContext) -> None:
        # The user and the keys load_memory saved with the run come first: a run resumed
        # by thread id alone (no run history, no user in its config) still saves for
        # the user it started for.
        saved_user = state.get("user")
        user = saved_user.get("id") if isinstance(saved_user, Mapping) else None
        user = user or ctx.config.get("user_id")
        if memory is None or not user:
            return None
        loaded = state.get("memory")
        keys = loaded.get("keys") if isinstance(loaded, Mapping) else None
        if not isinstance(keys, list):
            keys = list(pipeline.memory_keys)  # a checkpoint written before keys were kept
        shared = state.get("shared_context") or {}
        # A memory key comes from what the blocks produced, else from the run input.
        remembered = {
            k: shared[k] if k in shared else state[k]
            for k in keys
            if k in shared or state.get(k) is not None
        }
        await memory.update_preferences(str(user), remembered)
        runs = state.get("block_runs") or []
        await memory.record_run(
            str(user),
            pipeline.id,
            ctx.run_id,
            {
                "pipeline_version": pipeline.version,
                "nodes": [r["node"] for r in runs],
                "remembered": remembered,
            },
        )
        return None

    return save_memory
