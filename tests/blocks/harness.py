"""Running one stored block as a node of a real graph, and collecting what it emitted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flowcore import START, Checkpointer, Event, Graph, Resume, RunResult
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block


class DocState(BlockState, total=False):
    text: str
    question: str


@dataclass
class BlockRun:
    result: RunResult
    events: list[Event] = field(default_factory=list)

    def of_type(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    @property
    def outputs(self) -> Mapping[str, Any]:
        return self.result.state["results"]["step"]


async def run_block(
    block: BlockDefinition,
    executor: BlockExecutor,
    *,
    inputs: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | Resume | None = None,
    checkpointer: Checkpointer | None = None,
    **options: Any,
) -> BlockRun:
    """Run ``block`` as node ``step`` of a one-node graph and stream every event."""
    graph = Graph(DocState, name="block-test")
    add_block(graph, "step", block, executor, inputs=inputs)
    graph.add_edge(START, "step")
    events: list[Event] = []
    compiled = graph.compile(checkpointer=checkpointer)
    async with compiled.stream(state if state is not None else {}, **options) as stream:
        async for event in stream:
            events.append(event)
        result = await stream.result()
    return BlockRun(result, events)
