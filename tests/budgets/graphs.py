"""Two model blocks in a row on a thread, with a budget guard: the budget specs' graph."""

from __future__ import annotations

from typing import Any

from flowcore import END, START, Graph
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block
from flowcore.budgets import Budget, BudgetGuard
from flowcore.checkpoint import Checkpointer, InMemoryCheckpointer
from flowcore.llm import LLMResponse, ProviderRegistry, ScriptedProvider, Usage

MAX_TOKENS = 50


def reply(text: str, tokens_in: int = 40, tokens_out: int = 20) -> LLMResponse:
    return LLMResponse(
        text=text, usage=Usage(tokens_in, tokens_out), model="m", finish_reason="stop"
    )


def block(block_id: str, budget: Budget | None = None) -> BlockDefinition:
    return BlockDefinition(
        id=block_id,
        name=block_id,
        description=f"the {block_id} step",
        kind="llm",
        input_keys=["topic"],
        output_keys=["text"],
        prompt_template="Write about {{ topic }}.",
        model="m",
        max_tokens=MAX_TOKENS,
        max_retries=0,
        budget=budget,
    )


class S(BlockState, total=False):
    topic: str


def two_steps(
    model: ScriptedProvider,
    guard: BudgetGuard,
    *,
    checkpointer: Checkpointer | None = None,
    budget: Budget | None = None,
) -> Any:
    """``draft`` then ``polish``, each one model call of at most MAX_TOKENS out."""
    executor = BlockExecutor(providers=ProviderRegistry.single(model), budgets=guard)
    graph = Graph(S, name="writer")
    for name in ("draft", "polish"):
        add_block(graph, name, block(name, budget), executor, inputs={"topic": "<<state.topic>>"})
    graph.add_edge(START, "draft").add_edge("draft", "polish").add_edge("polish", END)
    return graph.compile(checkpointer=checkpointer or InMemoryCheckpointer())
