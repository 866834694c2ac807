"""A three-step graph whose steps wait for gate files: the multitask strategy specs drive it.

``s1 -> s2 -> s3``; each step waits until the file ``{gate}/{tag}-{step}``
exists, then appends ``"{tag}:{step}"`` to ``trail``. A run's input sets
``tag`` (and ``gate``), so the trail shows which run did which step.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

from flowcore import END, START, Graph, append
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.compiled import CompiledGraph

NAME = "steps"
STEPS = ("s1", "s2", "s3")


class StepState(TypedDict, total=False):
    tag: str
    gate: str
    trail: Annotated[list[str], append]


def _step(name: str) -> Any:
    async def step(state: Mapping[str, Any]) -> dict[str, Any]:
        gate = os.path.join(str(state["gate"]), f"{state['tag']}-{name}")
        async with asyncio.timeout(60):
            # A file, not an asyncio.Event: the spec opens the gate from outside the run.
            while not await asyncio.to_thread(os.path.exists, gate):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        return {"trail": [f"{state['tag']}:{name}"]}

    return step


def build(checkpointer: Checkpointer) -> dict[str, CompiledGraph]:
    """The steps graph on ``checkpointer``."""
    graph = Graph(StepState)
    for name in STEPS:
        graph.add_node(name, _step(name))
    graph.add_edge(START, "s1").add_edge("s1", "s2").add_edge("s2", "s3").add_edge("s3", END)
    return {NAME: graph.compile(name=NAME, version="1", checkpointer=checkpointer)}
