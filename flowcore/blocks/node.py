"""Putting blocks into graphs: one node per block, all running the same executor.

A block node reads its inputs from the node's declared ``inputs`` (where
``<<n1.field>>`` references are resolved) and, for any input the block
needs that is not declared there, from ``state["shared_context"]``. It
writes its outputs three ways: under its node name in ``results``, merged
into ``shared_context`` (the bus later blocks read from), and as one run
record appended to ``block_runs``. ``<<node.field>>`` references to a block
node read its outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Annotated, Any, TypedDict, TypeVar

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.errors import FlowcoreError
from flowcore.graph.builder import Graph
from flowcore.graph.policy import RetryPolicy
from flowcore.scheduler.context import NodeContext
from flowcore.state.reducers import append, merge

__all__ = ["BlockState", "add_block", "block_node", "block_outputs", "branch_router"]

G = TypeVar("G", bound=Graph)


class BlockState(TypedDict, total=False):
    """The state keys block nodes write; extend it with your own keys.

    Example:
        >>> class LunchState(BlockState):
        ...     user_request: str
    """

    results: Annotated[dict[str, Any], merge]
    shared_context: Annotated[dict[str, Any], merge]
    block_runs: Annotated[list[dict[str, Any]], append]


def block_outputs(name: str) -> Callable[[Mapping[str, Any]], Any]:
    """The ``output_view`` of a block node: ``<<name.field>>`` reads its outputs.

    Example:
        >>> block_outputs("n1")({"results": {"n1": {"summary": "s"}}})
        {'summary': 's'}
    """

    def view(update: Mapping[str, Any]) -> Any:
        return (update.get("results") or {}).get(name, {})

    return view


def block_node(
    name: str, block: BlockDefinition, executor: BlockExecutor
) -> Callable[[Mapping[str, Any], NodeContext], Any]:
    """The node function that runs ``block`` through ``executor`` as node ``name``.

    Example:
        >>> # graph.add_node("n1", block_node("n1", summarize, executor), output_view=...)
    """
    wanted = list((block.input_schema.get("properties") or {}).keys())

    async def run_block(state: Mapping[str, Any], ctx: NodeContext) -> dict[str, Any]:
        inputs = dict(ctx.inputs)
        shared = state.get("shared_context") or {}
        for key in wanted:
            if key not in inputs and key in shared:
                inputs[key] = shared[key]
        outcome = await executor.execute(block, inputs, ctx)
        outputs = dict(outcome.outputs)
        record = {
            "node": name,
            "block_id": block.id,
            "block_version": block.version,
            "attempts": outcome.attempts,
            "duration": outcome.duration,
            "input_tokens": outcome.usage.input_tokens,
            "output_tokens": outcome.usage.output_tokens,
            "metadata": dict(outcome.metadata),
        }
        return {"results": {name: outputs}, "shared_context": outputs, "block_runs": [record]}

    run_block.__name__ = f"block_{block.id}"
    return run_block


def branch_router(name: str) -> Callable[[Mapping[str, Any]], Hashable]:
    """A router that follows the branch key decision node ``name`` chose.

    Example:
        >>> branch_router("check")({"results": {"check": {"branch": "yes"}}})
        'yes'
    """

    def route(state: Mapping[str, Any]) -> Hashable:
        result = (state.get("results") or {}).get(name) or {}
        if "branch" not in result:
            raise FlowcoreError(
                f"decision node {name!r} left no branch in state['results'][{name!r}]; "
                "is the graph's state a BlockState?"
            )
        branch: Hashable = result["branch"]
        return branch

    route.__name__ = f"route_{name}"
    return route


def add_block(
    graph: G,
    name: str,
    block: BlockDefinition,
    executor: BlockExecutor,
    *,
    inputs: Mapping[str, Any] | None = None,
    branches: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
) -> G:
    """Add a node running ``block``; a decision block also gets its conditional edges.

    ``branches`` maps the decision's branch keys to node names (default: the
    block's own ``branches``). The block's ``timeout_seconds`` and
    ``max_retries`` apply inside the executor; ``retry`` adds an engine-level
    policy on top.

    Example:
        >>> # add_block(graph, "n1", summarize, executor, inputs={"text": "<<input.state.doc>>"})
    """
    graph.add_node(
        name,
        block_node(name, block, executor),
        inputs=inputs,
        retry=retry,
        output_view=block_outputs(name),
    )
    if block.kind == "decision":
        chosen = branches if branches is not None else block.branches or {}
        targets: dict[Hashable, str] = {key: node for key, node in chosen.items()}
        graph.add_conditional_edges(name, branch_router(name), targets)
    return graph
