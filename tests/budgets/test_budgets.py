"""Spec: token and cost budgets stop a run before the model call that could overshoot.

A call is refused when what was spent plus the most the call could use (its
prompt's estimated tokens plus its ``max_tokens``) passes a run, thread,
user or block budget; the run ends with ``BudgetExceededError`` after its
finished nodes are saved, and a resume with a raised budget completes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowcore import START, Graph, Resume, interrupt
from flowcore.blocks import BlockExecutor, add_block
from flowcore.budgets import (
    Budget,
    BudgetExceededError,
    BudgetGuard,
    InMemoryBudgetStore,
    Price,
    PriceTable,
    SqliteBudgetStore,
    estimate_prompt_tokens,
)
from flowcore.checkpoint import InMemoryCheckpointer, SqliteCheckpointer
from flowcore.errors import BlockConfigurationError, InvalidInputError
from flowcore.llm import ProviderRegistry, ScriptedProvider

from .graphs import MAX_TOKENS, S, block, reply, two_steps

# Each call's prompt (topic "ducks") is estimated at 72 tokens and may write MAX_TOKENS (50):
# 122 at most.
# draft really spends 40 in + 20 out = 60, so polish would need 60 + 122 = 182 in all.
PROMPT = 72
A_BUDGET_FOR_ONE_CALL = 150


def budget_error(result: Any) -> BudgetExceededError:
    assert result.status == "failed"
    (error,) = result.errors
    cause = error.cause
    assert isinstance(cause, BudgetExceededError), error
    return cause


def thread_budget(max_tokens: int) -> dict[str, Any]:
    return {"budgets": {"thread": {"max_tokens": max_tokens}}}


@pytest.mark.parametrize("on_error", ["fail_fast", "skip_dependents"])
async def test_a_budget_stops_the_run_before_the_call_that_would_overshoot_then_a_raised_budget_completes_it(  # noqa: E501
    on_error: str,
) -> None:
    model = ScriptedProvider([reply('{"text": "draft"}'), reply('{"text": "polished"}')])
    guard = BudgetGuard()
    graph = two_steps(model, guard)
    how = {"on_error": on_error}

    # A budget stop ends the run whatever its failure policy, so it can be resumed.
    stopped = await graph.run(
        {"topic": "ducks"}, thread_id="t1", config=thread_budget(A_BUDGET_FOR_ONE_CALL), **how
    )

    error = budget_error(stopped)
    assert (error.scope, error.key, error.unit) == ("thread", "t1", "tokens")
    assert (error.limit, error.spent, error.needed) == (150, 60, PROMPT + MAX_TOKENS)
    assert (error.node, error.block) == ("polish", "polish")
    assert "raise the budget" in str(error).lower()
    # The refused call was never made: polish's reply is still unused ...
    assert len(model.requests) == 1
    assert model.remaining == 1
    assert estimate_prompt_tokens(model.requests[0]) == PROMPT
    # ... draft's work was saved, and its tokens were counted for the thread.
    saved = await graph.get_state("t1")
    assert saved.values["results"] == {"draft": {"text": "draft"}}
    assert (await guard.spent("thread", "t1")).total_tokens == 60

    resumed = await graph.run(None, thread_id="t1", config=thread_budget(1_000), **how)

    assert resumed.status == "completed", resumed.errors
    assert resumed.state["results"] == {"draft": {"text": "draft"}, "polish": {"text": "polished"}}
    assert len(model.requests) == 2  # draft did not run again
    assert (await guard.spent("thread", "t1")).total_tokens == 120


async def test_a_thread_keeps_its_budget_across_a_pause_and_a_resume_that_names_none() -> None:
    model = ScriptedProvider([reply('{"text": "draft"}'), reply('{"text": "polished"}')])
    executor = BlockExecutor(providers=ProviderRegistry.single(model), budgets=BudgetGuard())

    def approve(state: Any) -> dict[str, Any]:
        return {"topic": interrupt("go on?")}

    graph = Graph(S, name="paused")
    add_block(graph, "draft", block("draft"), executor, inputs={"topic": "<<state.topic>>"})
    graph.add_node("approve", approve)
    add_block(graph, "polish", block("polish"), executor, inputs={"topic": "<<state.topic>>"})
    graph.add_edge(START, "draft").add_edge("draft", "approve").add_edge("approve", "polish")
    app = graph.compile(checkpointer=InMemoryCheckpointer())

    paused = await app.run(
        {"topic": "ducks"}, thread_id="t2", config=thread_budget(A_BUDGET_FOR_ONE_CALL)
    )
    assert paused.status == "interrupted"

    # The answer comes back without budgets: the thread's own still holds.
    stopped = await app.run(Resume("geese"), thread_id="t2")
    error = budget_error(stopped)
    assert (error.scope, error.limit, error.spent) == ("thread", 150, 60)
    assert model.remaining == 1

    done = await app.run(None, thread_id="t2", config=thread_budget(1_000))
    assert done.status == "completed", done.errors
    assert done.state["results"]["polish"] == {"text": "polished"}


async def test_a_run_budget_counts_one_run_and_a_user_budget_every_run_of_the_user() -> None:
    guard = BudgetGuard()
    model = ScriptedProvider([reply('{"text": "a"}'), reply('{"text": "b"}')] * 2)
    graph = two_steps(model, guard)
    user = {"user_id": "ada"}

    first = await graph.run(
        {"topic": "x"},
        thread_id="t3",
        config={**user, "budgets": {"run": {"max_tokens": 300}, "user": {"max_tokens": 400}}},
    )
    assert first.status == "completed", first.errors
    assert (await guard.spent("user", "ada")).total_tokens == 120

    # A new thread of the same user: its first call fits (120 + 122 <= 400), the second not.
    second = await graph.run(
        {"topic": "y"}, thread_id="t4", config={**user, "budgets": {"user": {"max_tokens": 300}}}
    )
    error = budget_error(second)
    assert (error.scope, error.key, error.spent, error.limit) == ("user", "ada", 180, 300)

    tight = two_steps(ScriptedProvider([reply('{"text": "a"}')]), BudgetGuard())
    over = await tight.run(
        {"topic": "z"}, thread_id="t5", config={"budgets": {"run": {"max_tokens": 100}}}
    )
    error = budget_error(over)
    assert (error.scope, error.node, error.spent) == ("run", "draft", 0)


async def test_a_block_budget_caps_each_execution_of_that_block() -> None:
    model = ScriptedProvider([reply('{"text": "a"}')])
    graph = two_steps(model, BudgetGuard(), budget=Budget(max_tokens=PROMPT + MAX_TOKENS - 1))

    result = await graph.run({"topic": "ducks"}, thread_id="t6")

    error = budget_error(result)
    assert (error.scope, error.key, error.needed) == ("block", "draft", PROMPT + MAX_TOKENS)
    assert model.requests == []


async def test_a_cost_budget_prices_calls_from_a_table_the_user_extends() -> None:
    # 1 dollar per million tokens in, 2 out: draft costs 40 + 40 = 80 micro-dollars.
    prices = PriceTable.default().with_prices({"m": Price(1.0, 2.0)})
    guard = BudgetGuard(prices=prices)
    model = ScriptedProvider([reply('{"text": "a"}'), reply('{"text": "b"}')])
    graph = two_steps(model, guard)
    most = Price(1.0, 2.0).cost(PROMPT, MAX_TOKENS)  # what one call may cost: 172e-6

    result = await graph.run(
        {"topic": "ducks"},
        thread_id="t7",
        config={"budgets": {"thread": {"max_cost_usd": 80e-6 + most - 1e-6}}},
    )

    error = budget_error(result)
    assert (error.unit, error.node) == ("usd", "polish")
    assert error.spent == pytest.approx(80e-6)
    assert error.needed == pytest.approx(most)
    assert "$0.0001" in str(error)
    assert (await guard.spent("thread", "t7")).cost_usd == pytest.approx(80e-6)


async def test_a_cost_budget_on_a_model_without_a_price_says_how_to_add_one() -> None:
    graph = two_steps(ScriptedProvider([reply('{"text": "a"}')]), BudgetGuard())

    result = await graph.run(
        {"topic": "x"}, thread_id="t8", config={"budgets": {"run": {"max_cost_usd": 1.0}}}
    )

    cause = result.errors[0].cause
    assert isinstance(cause, BlockConfigurationError)
    assert "model 'm' has no price" in str(cause)
    assert "with_prices" in str(cause)


async def test_budgets_that_are_not_budgets_are_named_in_the_error() -> None:
    graph = two_steps(ScriptedProvider([]), BudgetGuard())

    result = await graph.run(
        {"topic": "x"}, thread_id="t9", config={"budgets": {"thread": {"max_tokns": 5}}}
    )

    cause = result.errors[0].cause
    assert isinstance(cause, InvalidInputError)
    assert "thread.max_tokns" in str(cause)


async def test_a_sqlite_store_keeps_spending_and_budgets_for_another_process(
    tmp_path: Path,
) -> None:
    db = tmp_path / "app.db"
    async with SqliteCheckpointer(db) as saver, SqliteBudgetStore(db) as store:
        model = ScriptedProvider([reply('{"text": "draft"}')])
        graph = two_steps(model, BudgetGuard(store), checkpointer=saver)
        stopped = await graph.run(
            {"topic": "x"}, thread_id="t10", config=thread_budget(A_BUDGET_FOR_ONE_CALL)
        )
        assert budget_error(stopped).spent == 60

    # Later, elsewhere: a new guard on the same file still knows the thread's budget ...
    async with SqliteCheckpointer(db) as saver, SqliteBudgetStore(db) as store:
        model = ScriptedProvider([reply('{"text": "polished"}')])
        graph = two_steps(model, BudgetGuard(store), checkpointer=saver)
        again = await graph.run(None, thread_id="t10")
        assert budget_error(again).limit == 150
        assert model.requests == []
        # ... and a raised one finishes the run, counting on from what was spent.
        done = await graph.run(None, thread_id="t10", config=thread_budget(1_000))
        assert done.status == "completed", done.errors
        assert (await store.spent("thread", "t10")).total_tokens == 120


async def test_the_in_memory_store_adds_spending_to_every_scope_at_once() -> None:
    store = InMemoryBudgetStore()
    guard = BudgetGuard(store)
    model = ScriptedProvider([reply('{"text": "a"}'), reply('{"text": "b"}')])

    result = await two_steps(model, guard).run(
        {"topic": "x"}, thread_id="t11", config={"user_id": "bo"}
    )

    assert result.status == "completed"
    spent = [
        await store.spent("run", result.run_id),
        await store.spent("thread", "t11"),
        await store.spent("user", "bo"),
    ]
    assert {(s.input_tokens, s.output_tokens) for s in spent} == {(80, 40)}


async def test_a_budget_stop_ends_the_run_even_when_other_branches_could_go_on() -> None:
    model = ScriptedProvider([reply('{"text": "draft"}')])
    executor = BlockExecutor(providers=ProviderRegistry.single(model), budgets=BudgetGuard())
    graph = Graph(S, name="branches")
    for name in ("draft", "polish"):
        add_block(graph, name, block(name), executor, inputs={"topic": "<<state.topic>>"})
    graph.add_node("side1", lambda s: {}).add_node("side2", lambda s: {})
    graph.add_node("side3", lambda s: {})
    graph.add_edge(START, "draft").add_edge("draft", "polish")
    graph.add_edge(START, "side1").add_edge("side1", "side2").add_edge("side2", "side3")

    result = await graph.compile(checkpointer=InMemoryCheckpointer()).run(
        {"topic": "ducks"},
        thread_id="t12",
        on_error="skip_dependents",
        config=thread_budget(A_BUDGET_FOR_ONE_CALL),
    )

    budget_error(result)
    ran = {r.node for r in result.node_runs if r.status == "completed"}
    assert "side3" not in ran
    assert {"draft", "side1"} <= ran
