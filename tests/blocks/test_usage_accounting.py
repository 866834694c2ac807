"""Spec: every model call's tokens count, whatever became of the call or its node.

Failed, retried and repaired calls are counted in ``usage`` events, on the
node run and the run (``NodeRun.usage``, ``RunResult.usage``), in the run
history and in what the port reports. The reproduction of issue 19: six
streamed calls of 10 in / 12 out that end a failed run must show 60 / 72,
not 0 / 0; and the node that made them must not say "failed after 1 attempt".
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from flowcore import START, Graph, NodeContext, Resume
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block
from flowcore.checkpoint import InMemoryCheckpointer
from flowcore.errors import BlockOutputError, NodeError
from flowcore.history import InMemoryRunHistory, record_from_result
from flowcore.interrupts import interrupt
from flowcore.llm import (
    LLMRequest,
    LLMResponse,
    ProviderError,
    ProviderRegistry,
    ScriptedProvider,
    StreamEvent,
    ThrottleError,
    Usage,
)

from .harness import run_block

NOT_JSON = LLMResponse(text="not json at all", usage=Usage(10, 12), model="m")


def summarize(max_retries: int = 2) -> BlockDefinition:
    return BlockDefinition(
        id="summarize",
        name="Summarize",
        description="Summarize a text",
        kind="llm",
        input_keys=["text"],
        output_keys=["summary"],
        prompt_template="Summarize: {{ text }}",
        max_retries=max_retries,
    )


def executor(provider: Any) -> BlockExecutor:
    return BlockExecutor(providers=ProviderRegistry.single(provider), retry_wait=0)


async def test_six_failed_streamed_calls_count_sixty_in_and_seventy_two_out() -> None:
    model = ScriptedProvider([NOT_JSON] * 6)

    run = await run_block(summarize(), executor(model), inputs={"text": "ducks"})

    # Three attempts of the block, each an answer and its repair: six calls.
    assert run.result.status == "failed"
    assert len(model.requests) == 6
    usage = run.of_type("usage")
    assert [(u.input_tokens, u.output_tokens) for u in usage] == [(10, 12)] * 6
    assert len({u.invocation_id for u in usage}) == 6
    assert (run.result.usage.input_tokens, run.result.usage.output_tokens) == (60, 72)
    assert run.result.model_calls == 6
    (node,) = run.result.node_runs
    assert (node.status, node.usage.input_tokens, node.usage.output_tokens) == ("failed", 60, 72)
    assert node.model_calls == 6

    record = record_from_result(
        run.result,
        pipeline_id="p",
        pipeline_version=1,
        user_id=None,
        started_at=time.time(),
        inputs={},
    )
    assert (record.input_tokens, record.output_tokens) == (60, 72)
    assert (record.nodes[0].input_tokens, record.nodes[0].output_tokens) == (60, 72)
    history = InMemoryRunHistory()
    await history.save(record)
    stored = await history.get(record.run_id)
    assert (stored.input_tokens, stored.output_tokens) == (60, 72)


async def test_a_node_whose_block_called_the_model_six_times_does_not_say_one_attempt() -> None:
    model = ScriptedProvider([NOT_JSON] * 6)

    run = await run_block(summarize(), executor(model), inputs={"text": "ducks"})

    error = run.result.errors[0]
    assert isinstance(error, NodeError)
    assert isinstance(error.cause, BlockOutputError)
    assert (error.cause.block_attempts, error.cause.model_calls) == (3, 6)
    assert "failed after 3 block attempts, 6 model calls: BlockOutputError" in str(error)
    assert "after 1 attempt" not in str(error)
    (block_end,) = run.of_type("block_end")
    assert block_end.attempts == 3


async def test_a_completed_block_counts_its_repaired_call_too() -> None:
    model = ScriptedProvider([NOT_JSON, LLMResponse('{"summary": "s"}', usage=Usage(10, 3))])

    run = await run_block(summarize(), executor(model), inputs={"text": "ducks"})

    assert run.result.status == "completed"
    assert (run.result.usage.input_tokens, run.result.usage.output_tokens) == (20, 15)
    (record,) = run.result.state["block_runs"]
    assert (record["input_tokens"], record["output_tokens"]) == (20, 15)


class BreaksOffAfterUsage:
    """A stream that reports its tokens and then breaks off, once; then answers."""

    name = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover
        raise NotImplementedError

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        yield StreamEvent(kind="text", text='{"summary": ')
        if self.calls == 1:
            yield StreamEvent(kind="usage", usage=Usage(7, 5))
            raise ProviderError("connection reset mid-stream", provider="flaky", kind="server")
        answer = LLMResponse('{"summary": "s"}', usage=Usage(7, 6), model="flaky-1")
        yield StreamEvent(kind="text", text='"s"}')
        yield StreamEvent(kind="usage", usage=answer.usage)
        yield StreamEvent(kind="done", response=answer)


async def test_a_stream_that_breaks_off_after_reporting_tokens_is_billed_for_them() -> None:
    run = await run_block(summarize(), executor(BreaksOffAfterUsage()), inputs={"text": "x"})

    assert run.result.status == "completed"
    usage = run.of_type("usage")
    assert [(u.input_tokens, u.output_tokens) for u in usage] == [(7, 5), (7, 6)]
    assert usage[0].invocation_id != usage[1].invocation_id
    assert (run.result.usage.input_tokens, run.result.usage.output_tokens) == (14, 11)
    assert run.result.model_calls == 2


async def test_a_refused_request_is_a_call_without_tokens_or_usage_event() -> None:
    throttled = ThrottleError("429", provider="scripted", kind="rate_limit", retry_after=0.0)
    model = ScriptedProvider([throttled, LLMResponse('{"summary": "s"}', usage=Usage(4, 2))])

    run = await run_block(summarize(), executor(model), inputs={"text": "x"})

    assert [(u.input_tokens, u.output_tokens) for u in run.of_type("usage")] == [(4, 2)]
    assert run.result.model_calls == 2
    assert (run.result.usage.input_tokens, run.result.usage.output_tokens) == (4, 2)


class Doc(BlockState, total=False):
    text: str
    answer: str


async def test_calls_of_a_node_that_pauses_count_in_the_run_and_its_history() -> None:
    model = ScriptedProvider([LLMResponse('{"summary": "s"}', usage=Usage(10, 12))] * 2)
    run_it = executor(model)
    block = summarize()

    async def draft_then_ask(state: Mapping[str, Any], ctx: NodeContext) -> dict[str, Any]:
        outcome = await run_it.execute(block, {"text": "ducks"}, ctx)
        ok = interrupt({"draft": outcome.outputs["summary"]})
        return {"answer": f"{outcome.outputs['summary']} ({ok})"}

    graph = Graph(Doc, name="review")
    graph.add_node("draft", draft_then_ask)
    graph.add_edge(START, "draft")
    compiled = graph.compile(checkpointer=InMemoryCheckpointer())

    paused = await compiled.run({}, thread_id="t1")
    resumed = await compiled.run(Resume("ok"), thread_id="t1")

    # The paused node has no NodeRun, yet its call counts; the re-run calls again.
    assert paused.status == "interrupted"
    assert paused.node_runs == ()
    assert (paused.usage.input_tokens, paused.model_calls) == (10, 1)
    record = record_from_result(
        paused, pipeline_id="p", pipeline_version=1, user_id=None, started_at=0.0, inputs={}
    )
    assert (record.input_tokens, record.output_tokens) == (10, 12)
    assert resumed.status == "completed"
    assert (resumed.usage.input_tokens, resumed.node_runs[0].usage.output_tokens) == (10, 12)


async def test_a_graph_run_inside_a_node_charges_that_node() -> None:
    model = ScriptedProvider([LLMResponse('{"summary": "s"}', usage=Usage(10, 12))])
    inner = Graph(Doc, name="inner")
    add_block(inner, "sum", summarize(), executor(model), inputs={"text": "<<state.text>>"})
    inner.add_edge(START, "sum")
    inner_graph = inner.compile()

    async def delegate(state: Mapping[str, Any]) -> dict[str, Any]:
        done = await inner_graph.run({"text": "ducks"})
        return {"answer": done.state["results"]["sum"]["summary"]}

    outer = Graph(Doc, name="outer")
    outer.add_node("delegate", delegate)
    outer.add_edge(START, "delegate")

    result = await outer.compile().run({})

    assert result.state["answer"] == "s"
    (node,) = result.node_runs
    assert (node.usage.input_tokens, node.usage.output_tokens, node.model_calls) == (10, 12, 1)
    assert (result.usage.input_tokens, result.model_calls) == (10, 1)
