"""Spec: every tool call has its own id, the same from ``tool_call_start`` to ``tool_call_result``.

A model's id is kept; a call without one (a tool block's call, a model's
``''``) gets a fresh UUID from the ToolRunner. Ids never repeat across the
passes of a loop, a block's retries or a model's tool rounds: a retry is a
new call with a new id.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from pydantic import BaseModel

from flowcore import END, START, Graph
from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore, add_block
from flowcore.llm import LLMResponse, ProviderRegistry, ScriptedProvider, ToolCall
from flowcore.tools import Tool, ToolRunner

from .harness import DocState, run_block


class UrlArgs(BaseModel):
    url: str


class Page(BaseModel):
    status: int
    body: str


def http_tool(failures: int = 0) -> Tool:
    left = [failures]

    async def fetch(args: UrlArgs) -> Page:
        if left[0] > 0:
            left[0] -= 1
            raise ConnectionError("flaky")
        return Page(status=200, body="<html></html>")

    return Tool("http_get", "Fetch a URL", UrlArgs, Page, fetch, allowlist={"status"})


def pairs(events: list[Any]) -> list[tuple[str, str]]:
    """(kind, id) of every tool event, in order."""
    return [(e.type, e.tool_call_id) for e in events if e.type.startswith("tool_call")]


def assert_each_start_has_its_result(events: list[Any]) -> list[str]:
    seen = pairs(events)
    starts = [i for kind, i in seen if kind == "tool_call_start"]
    results = [i for kind, i in seen if kind == "tool_call_result"]
    assert starts == results  # same ids, same order (calls here run one at a time)
    assert all(starts)
    return starts


class LoopState(DocState, total=False):
    rounds: int


async def test_three_passes_of_a_loop_give_three_distinct_ids(
    block_store: SqliteBlockStore,
) -> None:
    executor = BlockExecutor(tools=ToolRunner([http_tool()]))
    graph = Graph(LoopState, name="poll")
    add_block(graph, "fetch", await block_store.get("http_get"), executor, inputs={"url": "u"})
    graph.add_node("count", lambda s: {"rounds": s.get("rounds", 0) + 1})

    def again(state: Mapping[str, Any]) -> Hashable:
        return "fetch" if state["rounds"] < 3 else END

    graph.add_edge(START, "fetch").add_edge("fetch", "count")
    graph.add_conditional_edges("count", again, {"fetch": "fetch", END: END})
    events: list[Any] = []
    async with graph.compile().stream({}) as stream:
        async for event in stream:
            events.append(event)
        result = await stream.result()

    assert result.status == "completed"
    ids = assert_each_start_has_its_result(events)
    assert len(ids) == 3
    assert len(set(ids)) == 3


async def test_a_retried_tool_call_is_a_new_call_with_a_new_id(
    block_store: SqliteBlockStore,
) -> None:
    block = (await block_store.get("http_get")).model_copy(update={"max_retries": 2})
    executor = BlockExecutor(tools=ToolRunner([http_tool(failures=2)]), retry_wait=0)

    run = await run_block(block, executor, inputs={"url": "u"})

    assert run.result.status == "completed"
    ids = assert_each_start_has_its_result(run.events)
    assert len(ids) == len(set(ids)) == 3
    assert [r.is_error for r in run.of_type("tool_call_result")] == [True, True, False]


def page_check() -> BlockDefinition:
    return BlockDefinition(
        id="page_check",
        name="Page check",
        description="Check whether a page is up",
        kind="llm",
        input_keys=["url"],
        output_keys=["up"],
        prompt_template="Is {{ url }} up?",
        metadata={"tools": ["http_get"]},
    )


async def test_model_ids_are_kept_and_empty_or_repeated_ones_replaced() -> None:
    def asks(*ids: str) -> LLMResponse:
        return LLMResponse(tool_calls=tuple(ToolCall(i, "http_get", {"url": "u"}) for i in ids))

    model = ScriptedProvider(
        [
            asks("call_1", ""),  # round 1: one id of its own, one empty
            asks("call_1", "call_2"),  # round 2: repeats call_1 from round 1
            '{"up": true}',
        ]
    )
    executor = BlockExecutor(
        providers=ProviderRegistry.single(model), tools=ToolRunner([http_tool()])
    )

    run = await run_block(page_check(), executor, inputs={"url": "u"})

    assert run.outputs == {"up": True}
    seen = pairs(run.events)
    starts = [i for kind, i in seen if kind == "tool_call_start"]
    assert sorted(i for kind, i in seen if kind == "tool_call_result") == sorted(starts)
    assert len(starts) == len(set(starts)) == 4
    assert starts[0] == "call_1"
    assert "call_2" in starts
    # What the model saw: each assistant call is answered by a tool message with its id.
    for request in model.requests[1:]:
        asked = [c.id for m in request.messages for c in m.tool_calls]
        answered = [m.tool_call_id for m in request.messages if m.role == "tool"]
        assert asked == answered
        assert "" not in asked
