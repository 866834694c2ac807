"""Spec: every tool call runs validate -> execute -> validate -> redact -> emit -> return."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from pydantic import BaseModel

from flowcore.errors import FlowcoreError
from flowcore.llm import ToolCall
from flowcore.tools import (
    Tool,
    ToolCallFinished,
    ToolCallStarted,
    ToolRunner,
)


class Query(BaseModel):
    query: str
    limit: int = 3


class Hits(BaseModel):
    query: str
    count: int
    documents: list[str]


async def search(args: Query) -> Hits:
    return Hits(query=args.query, count=2, documents=["secret a", "secret b"][: args.limit])


def tool(handler: Any = search, **options: Any) -> Tool:
    options.setdefault("allowlist", {"query", "count"})
    return Tool("search", "Search the archive", Query, Hits, handler, **options)


def runner(*tools: Tool) -> tuple[ToolRunner, list[Any]]:
    events: list[Any] = []
    return ToolRunner(tools or (tool(),), emit=events.append), events


async def test_a_good_call_returns_the_full_value_and_emits_only_allowlisted_fields() -> None:
    run, events = runner()

    result = await run.run(ToolCall("c1", "search", {"query": "ducks"}))

    assert result.ok
    assert result.value == {"query": "ducks", "count": 2, "documents": ["secret a", "secret b"]}
    assert events == [
        ToolCallStarted("c1", "search", {"query": "ducks"}),
        ToolCallFinished("c1", "search", {"query": "ducks", "count": 2}),
    ]


@pytest.mark.parametrize(
    ("call", "code", "message"),
    [
        (ToolCall("c2", "serch", {"query": "x"}), "unavailable", "no tool named 'serch'"),
        (ToolCall("c3", "search", {"limit": "many"}), "validation", "limit, query"),
    ],
)
async def test_failures_before_execution_still_emit_a_result_with_the_same_id(
    call: ToolCall, code: str, message: str
) -> None:
    run, events = runner()

    result = await run.run(call)

    assert (result.ok, result.error_code) == (False, code)
    assert message in (result.safe_message or "")
    start, end = events
    assert isinstance(start, ToolCallStarted)
    assert isinstance(end, ToolCallFinished)
    assert (end.tool_call_id, end.is_error, end.error_code, end.result) == (
        call.id,
        True,
        code,
        None,
    )


async def test_error_messages_never_echo_argument_values() -> None:
    run, _ = runner()

    result = await run.run(ToolCall("c4", "search", {"query": {"password": "hunter2"}}))

    assert result.error_code == "validation"
    assert "hunter2" not in (result.safe_message or "")


async def test_a_raising_handler_is_an_execution_error_without_its_message() -> None:
    async def broken(args: Query) -> Hits:
        raise RuntimeError("db password is hunter2")

    run, events = runner(tool(broken))

    result = await run.run(ToolCall("c5", "search", {"query": "x"}))

    assert (result.error_code, result.safe_message) == ("execution", "tool failed (RuntimeError)")
    assert events[-1].error_code == "execution"


async def test_a_slow_handler_is_cut_off_at_its_timeout() -> None:
    async def slow(args: Query) -> Hits:
        await asyncio.sleep(10)
        raise AssertionError("unreachable")

    run, _ = runner(tool(slow, timeout=0.05))

    result = await run.run(ToolCall("c6", "search", {"query": "x"}))

    assert (result.error_code, result.safe_message) == ("execution", "tool timed out after 0.05s")


async def test_a_result_that_breaks_the_output_model_is_a_validation_error() -> None:
    async def sloppy(args: Query) -> dict[str, Any]:
        return {"query": "x", "count": "lots"}

    run, _ = runner(tool(sloppy))

    result = await run.run(ToolCall("c7", "search", {"query": "x"}))

    assert result.error_code == "validation"
    assert result.safe_message == "invalid result: count, documents"


async def test_unknown_result_fields_never_pass_through() -> None:
    async def chatty(args: Query) -> dict[str, Any]:
        return {"query": "x", "count": 0, "documents": [], "api_key": "sk-123"}

    run, events = runner(tool(chatty, allowlist={"query", "count", "documents"}))

    result = await run.run(ToolCall("c8", "search", {"query": "x"}))

    assert result.value == {"query": "x", "count": 0, "documents": []}
    assert "api_key" not in events[-1].result


async def test_a_tool_without_an_allowlist_fails_closed() -> None:
    run, events = runner(tool(allowlist=None))

    result = await run.run(ToolCall("c9", "search", {"query": "x"}))

    assert result.error_code == "redaction_failed"
    assert events[-1].result is None


def test_an_allowlist_naming_unknown_fields_is_refused_up_front() -> None:
    with pytest.raises(FlowcoreError, match="not fields of Hits"):
        tool(allowlist={"count", "secret"})


async def test_parallel_calls_keep_their_order_and_each_timeout() -> None:
    async def wait_then_answer(args: Query) -> Hits:
        await asyncio.sleep(0.05 if args.query == "slow" else 0)
        return Hits(query=args.query, count=1, documents=[])

    # Far above the 0.05 s the slow call takes, however busy the machine.
    run, _ = runner(tool(wait_then_answer, timeout=30.0))
    calls = [ToolCall(f"c{i}", "search", {"query": q}) for i, q in enumerate(["slow", "fast", "x"])]

    results = await run.run_many(calls)

    assert [r.tool_call_id for r in results] == ["c0", "c1", "c2"]
    assert all(r.ok for r in results)


def test_tools_are_offered_to_models_with_their_argument_schema() -> None:
    run, _ = runner()

    (spec,) = run.specs()

    assert spec.name == "search"
    assert spec.parameters["required"] == ["query"]


# --------------------------------------------------------------- tool call ids


async def test_a_call_without_an_id_gets_one_fresh_uuid_on_both_events_and_the_result() -> None:
    run, events = runner()

    first = await run.run(ToolCall("", "search", {"query": "ducks"}))
    second = await run.run(ToolCall("", "search", {"query": "ducks"}))

    start, end, *_ = events
    assert first.tool_call_id == start.tool_call_id == end.tool_call_id
    assert str(uuid.UUID(first.tool_call_id)) == first.tool_call_id
    assert second.tool_call_id != first.tool_call_id
    assert [e.tool_call_id for e in events[2:]] == [second.tool_call_id] * 2


async def test_identify_keeps_model_ids_and_replaces_empty_and_repeated_ones() -> None:
    run, _ = runner()
    taken: set[str] = set()

    batch1 = run.identify(
        [ToolCall("call_a", "search", {}), ToolCall("", "search", {}), ToolCall("call_a", "x", {})],
        taken,
    )
    batch2 = run.identify([ToolCall("call_a", "search", {}), ToolCall("call_b", "x", {})], taken)

    assert batch1[0].id == "call_a"  # the model's own id is kept
    assert batch1[1].id not in ("", "call_a")  # '' gets a fresh id
    assert batch1[2].id not in ("call_a", batch1[1].id)  # a repeat within the batch too
    assert batch2[0].id != "call_a"  # ... and a repeat of an earlier round's id
    assert batch2[1].id == "call_b"
    ids = [c.id for c in (*batch1, *batch2)]
    assert len(set(ids)) == len(ids)
    assert taken == set(ids)


async def test_run_many_answers_each_call_under_its_own_id() -> None:
    run, events = runner()

    results = await run.run_many(
        [ToolCall("", "search", {"query": "a"}), ToolCall("", "search", {"query": "b"})]
    )

    ids = [r.tool_call_id for r in results]
    assert len(set(ids)) == 2
    assert all(ids)
    assert sorted(e.tool_call_id for e in events) == sorted(ids * 2)
