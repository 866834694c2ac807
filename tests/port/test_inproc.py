"""Spec: InProcExecutor runs flowcore graphs, pipelines and task plans behind the port.

``run`` returns at once with the run already going; the handle yields
AiEvents as they happen, opens with ``run_start`` and ends with exactly one
``done``; ``final`` resolves once to the outcome for every way a run can end;
a request that cannot even start becomes a failed run, not an exception;
every event carries the caller's correlation ids; each model call has its
own invocation id; and a redactor cleans every data field.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.checkpoint import InMemoryCheckpointer
from flowcore.history import InMemoryRunHistory
from flowcore.interrupts import Resume
from flowcore.llm import ProviderRegistry, ScriptedProvider, ThrottleError
from flowcore.llm.prompt_hash import prompt_hash
from flowcore.memory import InMemoryStore
from flowcore.pipeline import Pipeline, PipelineRunner, TaskPlan
from flowcore.port import (
    AiEvent,
    Caller,
    GraphExecutorPort,
    HandleConsumedError,
    InProcExecutor,
    PendingQuestion,
    RunHandle,
    RunOptions,
    RunOutcome,
    RunRequest,
    UsageTotals,
)

from .graphs import (
    ChunkedProvider,
    answer_graph,
    chat_graph,
    failing_graph,
    gated_graph,
    pausing_graph,
)

GUARD = 30.0  # only reached when a spec fails; a busy machine stays far below it
CALLER = Caller(request_id="req-42", trace_id="trace-9", user_id="ada", billing_account_id="acct-1")


def request(target: Any, inputs: Any = None, **options: Any) -> RunRequest:
    return RunRequest(target, inputs, CALLER, RunOptions(**options))


async def drain(handle: RunHandle) -> list[AiEvent]:
    async with asyncio.timeout(GUARD):
        return [event async for event in handle]


async def finish(handle: RunHandle) -> tuple[list[AiEvent], RunOutcome]:
    events = await drain(handle)
    async with asyncio.timeout(GUARD):
        return events, await handle.final


def types(events: list[AiEvent]) -> list[str]:
    return [e.type for e in events]


@pytest.fixture
async def executor() -> AsyncIterator[InProcExecutor]:
    async with InProcExecutor() as ex:
        yield ex


# ------------------------------------------------------------- the happy path


async def test_a_completed_run_streams_its_nodes_text_tool_and_usage_in_order(
    executor: InProcExecutor,
) -> None:
    graph, _ = chat_graph()
    events, outcome = await finish(executor.run(request(graph, {"question": "life?"})))

    kinds = types(events)
    assert kinds[:2] == ["run_start", "node_start"]
    assert kinds[-3:] == ["node_start", "node_end", "done"]
    research = kinds[1 : kinds.index("node_end") + 1]
    # call 1 streams, asks for the tool; the tool runs; call 2 streams the answer.
    first_usage = research.index("usage_report")
    assert set(research[1:first_usage]) == {"text_delta"}
    assert research[first_usage + 1 : first_usage + 3] == ["tool_call_start", "tool_call_result"]
    assert research[-2:] == ["usage_report", "node_end"]
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[-1].status == "completed"  # type: ignore[union-attr]
    assert outcome.status == "completed"
    assert outcome.output is not None
    assert outcome.output["summary"] == "summary: forty two"
    assert outcome.error is None
    assert outcome.interrupts == ()


async def test_every_event_carries_the_run_id_graph_and_the_callers_correlation_ids(
    executor: InProcExecutor,
) -> None:
    graph, _ = chat_graph(name="chat", version="7")
    handle = executor.run(request(graph, {"question": "life?"}))
    events, outcome = await finish(handle)

    envelopes = {
        (e.run_id, e.graph_name, e.graph_version, e.request_id, e.trace_id) for e in events
    }
    assert envelopes == {(handle.run_id, "chat", "7", "req-42", "trace-9")}
    assert outcome.run_id == handle.run_id


async def test_run_returns_at_once_and_the_run_goes_on_without_a_reader(
    executor: InProcExecutor,
) -> None:
    graph, _ = chat_graph()
    handle = executor.run(request(graph, {"question": "life?"}))
    final = handle.final
    assert not handle.done  # nothing ran yet: run() did not wait

    async with asyncio.timeout(GUARD):
        outcome = await final  # nobody reads the events; the run still ends
    assert outcome.status == "completed"
    events = await drain(handle)  # and they are all still there, in order
    assert types(events)[0] == "run_start"
    assert types(events)[-1] == "done"


async def test_events_are_yielded_as_they_happen_not_when_the_run_ends(
    executor: InProcExecutor,
) -> None:
    gate = asyncio.Event()
    handle = executor.run(request(gated_graph(gate), {}))
    seen: list[AiEvent] = []
    async with asyncio.timeout(GUARD):
        async for event in handle:
            seen.append(event)
            if event.type == "node_start" and getattr(event, "node", "") == "wait":
                break
    # The run cannot end before the gate opens, yet the events so far have arrived.
    assert types(seen) == ["run_start", "node_start", "node_end", "node_start"]
    assert not handle.done
    gate.set()
    async with asyncio.timeout(GUARD):
        assert (await handle.final).status == "completed"


async def test_many_runs_at_once_are_independent(executor: InProcExecutor) -> None:
    handles = [executor.run(request(chat_graph()[0], {"question": str(i)})) for i in range(5)]
    results = await asyncio.gather(*(finish(h) for h in handles))

    assert len({h.run_id for h in handles}) == 5
    for handle, (events, outcome) in zip(handles, results, strict=True):
        assert {e.run_id for e in events} == {handle.run_id}
        assert [e.seq for e in events] == list(range(len(events)))
        assert outcome.status == "completed"


async def test_the_executor_and_its_handles_satisfy_the_port_protocols(
    executor: InProcExecutor,
) -> None:
    handle = executor.run(request(chat_graph()[0], {"question": "q"}))
    assert isinstance(executor, GraphExecutorPort)
    assert isinstance(handle, RunHandle)
    await finish(handle)


async def test_a_handle_is_iterated_once_and_ends_after_done(executor: InProcExecutor) -> None:
    handle = executor.run(request(chat_graph()[0], {"question": "q"}))
    events = aiter(handle)
    got = [e async for e in events]
    assert types(got).count("done") == 1

    with pytest.raises(StopAsyncIteration):
        await anext(events)
    with pytest.raises(HandleConsumedError, match="RunEventRelay"):
        aiter(handle)


# ------------------------------------------------------------ model calls


async def test_each_model_call_has_one_invocation_id_shared_by_its_deltas_and_usage(
    executor: InProcExecutor,
) -> None:
    graph, model = chat_graph()
    events, _ = await finish(executor.run(request(graph, {"question": "life?"})))

    reports = [e for e in events if e.type == "usage_report"]
    deltas = [e for e in events if e.type == "text_delta"]
    assert len(reports) == 2
    ids = [r.invocation_id for r in reports]  # type: ignore[union-attr]
    assert len(set(ids)) == 2
    assert all(ids)
    assert {d.invocation_id for d in deltas} == set(ids)  # type: ignore[union-attr]
    texts = {
        i: "".join(d.delta for d in deltas if d.invocation_id == i)  # type: ignore[union-attr]
        for i in ids
    }
    assert texts == {ids[0]: "Let me check.", ids[1]: '{"answer": "forty two"}'}
    # Each report comes after its own deltas.
    for report in reports:
        own = [d.seq for d in deltas if d.invocation_id == report.invocation_id]  # type: ignore[union-attr]
        assert max(own) < report.seq
    assert [r.prompt_hash for r in reports] == [prompt_hash(q) for q in model.requests]  # type: ignore[union-attr]


async def test_a_retried_call_is_a_new_invocation(executor: InProcExecutor) -> None:
    throttle = ThrottleError("slow down", provider="chunked", kind="rate_limit", retry_after=0)
    provider = ChunkedProvider([['{"answer": ', throttle], ['{"answer": ', '"ok"}']])
    events, outcome = await finish(executor.run(request(answer_graph(provider), {"question": "q"})))

    deltas = [e for e in events if e.type == "text_delta"]
    (report,) = [e for e in events if e.type == "usage_report"]
    first, second = deltas[0].invocation_id, deltas[-1].invocation_id  # type: ignore[union-attr]
    assert first != second
    assert report.invocation_id == second  # type: ignore[union-attr]
    assert outcome.status == "completed"


async def test_usage_reports_give_model_tokens_and_no_cost_when_the_provider_reports_none(
    executor: InProcExecutor,
) -> None:
    events, outcome = await finish(executor.run(request(chat_graph()[0], {"question": "q"})))

    reports = [e for e in events if e.type == "usage_report"]
    assert [
        (r.node, r.provider, r.model, r.input_tokens, r.output_tokens, r.cost_usd)  # type: ignore[union-attr]
        for r in reports
    ] == [
        ("research", "scripted", "small-model", 12, 3, None),
        ("research", "scripted", "small-model", 30, 4, None),
    ]
    assert all(r.prompt_hash.startswith("v1:") for r in reports)  # type: ignore[union-attr]
    assert outcome.usage == UsageTotals(input_tokens=42, output_tokens=7, cost_usd=None)


async def test_a_cost_the_provider_reports_reaches_the_usage_report_and_the_totals(
    executor: InProcExecutor,
) -> None:
    graph, _ = chat_graph(cost=0.0025)
    events, outcome = await finish(executor.run(request(graph, {"question": "q"})))

    costs = [e.cost_usd for e in events if e.type == "usage_report"]  # type: ignore[union-attr]
    assert costs == [0.0025, 0.0025]
    assert outcome.usage.cost_usd == pytest.approx(0.005)
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (42, 7)


async def test_tool_calls_show_their_arguments_and_only_the_allowlisted_result(
    executor: InProcExecutor,
) -> None:
    events, _ = await finish(executor.run(request(chat_graph()[0], {"question": "q"})))

    (start,) = [e for e in events if e.type == "tool_call_start"]
    (result,) = [e for e in events if e.type == "tool_call_result"]
    assert (start.node, start.tool_call_id, start.tool_name, start.args) == (  # type: ignore[union-attr]
        "research",
        "call-1",
        "lookup",
        {"topic": "life"},
    )
    assert result.tool_call_id == "call-1"  # type: ignore[union-attr]
    assert result.result == {"fact": "life is 42"}  # type: ignore[union-attr]
    assert (result.is_error, result.error_code) == (False, None)  # type: ignore[union-attr]


# ------------------------------------------------------------ every ending


async def test_a_failed_run_sends_one_error_per_error_then_done(
    executor: InProcExecutor,
) -> None:
    events, outcome = await finish(executor.run(request(failing_graph(), {})))

    assert types(events) == [
        "run_start",
        "node_start",
        "node_end",
        "node_start",
        "node_error",
        "error",
        "done",
    ]
    node_error, error, done = events[4], events[5], events[6]
    assert "Explosion: the reactor melted" in node_error.error  # type: ignore[union-attr]
    assert error.error_type == "NodeError"  # type: ignore[union-attr]
    assert "the reactor melted" in error.message  # type: ignore[union-attr]
    assert done.status == "failed"  # type: ignore[union-attr]
    assert outcome.status == "failed"
    assert outcome.output is None
    assert outcome.error is not None
    assert outcome.error.startswith("NodeError: node 'explode' failed")


@pytest.mark.parametrize(
    ("target", "inputs", "options", "error_type", "message"),
    [
        ("nope", {}, {}, "UnknownTargetError", "no graph named 'nope' is registered"),
        (42, {}, {}, "InvalidTargetError", "cannot run a int"),
        ("chat", {"colour": "red"}, {}, "InvalidInputError", "'colour' not in state schema"),
        (
            "chat",
            {"question": "q"},
            {"resume": "yes", "thread_id": "t"},
            "InvalidInputError",
            "not both",
        ),
        ("chat", None, {"resume": "yes"}, "InvalidInputError", "pass its thread_id too"),
        ("chat", {}, {"thread_id": "t1"}, "InvalidInputError", "has no checkpointer"),
    ],
    ids=[
        "unknown-name",
        "not-a-graph",
        "bad-input",
        "input-and-resume",
        "resume-no-thread",
        "thread-no-checkpointer",
    ],
)
async def test_a_request_that_cannot_start_is_a_failed_run_not_an_exception(
    target: Any, inputs: Any, options: dict[str, Any], error_type: str, message: str
) -> None:
    executor = InProcExecutor(graphs={"chat": chat_graph()[0]})
    handle = executor.run(request(target, inputs, **options))
    events, outcome = await finish(handle)

    assert types(events) == ["run_start", "error", "done"]
    assert [e.seq for e in events] == [0, 1, 2]
    assert {(e.run_id, e.request_id, e.trace_id) for e in events} == {
        (handle.run_id, "req-42", "trace-9")
    }
    assert events[1].error_type == error_type  # type: ignore[union-attr]
    assert message in events[1].message  # type: ignore[union-attr]
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith(f"{error_type}: ")


async def test_pipelines_need_a_runner(executor: InProcExecutor) -> None:
    pipeline = Pipeline.from_data({"id": "p", "name": "P", "nodes": []})
    events, outcome = await finish(executor.run(request(pipeline, {})))
    assert types(events) == ["run_start", "error", "done"]
    assert outcome.error is not None
    assert "InProcExecutor(runner=PipelineRunner(...))" in outcome.error
    assert events[0].graph_name == "p"


async def test_final_resolves_once_and_every_awaiter_gets_the_same_outcome(
    executor: InProcExecutor,
) -> None:
    handle = executor.run(request(failing_graph(), {}))
    early = [asyncio.ensure_future(handle.final) for _ in range(3)]
    events = await drain(handle)
    outcomes = await asyncio.gather(*early)

    assert outcomes[0] is outcomes[1] is outcomes[2]
    assert await handle.final is outcomes[0]
    assert outcomes[0].status == events[-1].status  # type: ignore[union-attr]


async def test_a_reader_that_sees_done_finds_final_already_resolved(
    executor: InProcExecutor,
) -> None:
    handle = executor.run(request(chat_graph()[0], {"question": "q"}))
    async for event in handle:
        if event.type == "done":
            assert handle.done


async def test_a_waiter_on_final_that_is_cancelled_does_not_cancel_the_run(
    executor: InProcExecutor,
) -> None:
    gate = asyncio.Event()
    handle = executor.run(request(gated_graph(gate), {}))
    waiter = asyncio.ensure_future(handle.final)
    await asyncio.sleep(0.01)
    waiter.cancel()
    gate.set()
    _, outcome = await finish(handle)
    assert outcome.status == "completed"


# ------------------------------------------------------------ cancellation


async def test_cancel_stops_a_running_node_and_still_ends_with_one_done(
    executor: InProcExecutor,
) -> None:
    gate = asyncio.Event()  # never set: the node can only end by cancellation
    handle = executor.run(request(gated_graph(gate), {}))
    seen: list[AiEvent] = []
    async with asyncio.timeout(GUARD):
        async for event in handle:
            seen.append(event)
            if event.type == "node_start" and getattr(event, "node", "") == "wait":
                handle.cancel()
    outcome = await handle.final

    assert types(seen)[-1] == "done"
    assert types(seen).count("done") == 1
    assert seen[-1].status == "cancelled"  # type: ignore[union-attr]
    assert outcome.status == "cancelled"
    assert outcome.output is None


async def test_cancel_before_the_run_started_still_gives_run_start_and_done(
    executor: InProcExecutor,
) -> None:
    handle = executor.run(request(chat_graph()[0], {"question": "q"}))
    handle.cancel()
    events, outcome = await finish(handle)

    assert types(events) == ["run_start", "done"]
    assert outcome.status == "cancelled"


async def test_cancel_after_the_run_ended_changes_nothing(executor: InProcExecutor) -> None:
    handle = executor.run(request(chat_graph()[0], {"question": "q"}))
    events, outcome = await finish(handle)
    handle.cancel()
    assert await handle.final is outcome
    assert types(events).count("done") == 1


async def test_closing_the_executor_cancels_the_runs_still_going() -> None:
    gate = asyncio.Event()
    executor = InProcExecutor()
    handle = executor.run(request(gated_graph(gate), {}))
    events = aiter(handle)
    async with asyncio.timeout(GUARD):
        # Close while the run is inside its gated node, not at whatever point 10 ms reached.
        async for event in events:
            if event.type == "node_start" and getattr(event, "node", "") == "wait":
                break
        await executor.aclose()
        rest = [event async for event in events]
    assert handle.done
    assert (await handle.final).status == "cancelled"
    assert types(rest)[-1] == "done"


# --------------------------------------------------------- interrupt, resume


async def test_an_interrupted_run_names_its_question_and_a_resume_answers_it(
    executor: InProcExecutor,
) -> None:
    graph = pausing_graph(InMemoryCheckpointer())
    events, paused = await finish(executor.run(request(graph, {"question": "v2"}, thread_id="t1")))

    (asked,) = [e for e in events if e.type == "interrupt"]
    assert asked.node == "ask"  # type: ignore[union-attr]
    assert asked.value == {"question": "Ship it?", "token": "v2"}  # type: ignore[union-attr]
    assert events[0].thread_id == "t1"  # type: ignore[union-attr]
    assert events[-1].status == "interrupted"  # type: ignore[union-attr]
    assert paused.status == "interrupted"
    assert paused.thread_id == "t1"
    assert paused.interrupts == (
        PendingQuestion(asked.interrupt_id, "ask", {"question": "Ship it?", "token": "v2"}),  # type: ignore[union-attr]
    )

    resumed_events, resumed = await finish(
        executor.run(request(graph, None, thread_id="t1", resume="yes"))
    )
    assert resumed.status == "completed"
    assert resumed.output is not None
    assert resumed.output["summary"] == "shipped: yes"
    assert resumed_events[-1].status == "completed"  # type: ignore[union-attr]


async def test_a_resume_may_answer_by_interrupt_id(executor: InProcExecutor) -> None:
    graph = pausing_graph(InMemoryCheckpointer())
    _, paused = await finish(executor.run(request(graph, {}, thread_id="t2")))
    (question,) = paused.interrupts

    _, resumed = await finish(
        executor.run(
            request(graph, None, thread_id="t2", resume=Resume(by_id={question.interrupt_id: "ok"}))
        )
    )
    assert resumed.output is not None
    assert resumed.output["summary"] == "shipped: ok"


async def test_resuming_a_thread_that_does_not_exist_is_a_failed_run(
    executor: InProcExecutor,
) -> None:
    graph = pausing_graph(InMemoryCheckpointer())
    events, outcome = await finish(executor.run(request(graph, None, thread_id="x", resume=1)))
    assert types(events) == ["run_start", "error", "done"]
    assert events[1].error_type == "ResumeError"  # type: ignore[union-attr]
    assert outcome.thread_id == "x"


# ------------------------------------------------------------ limits, names


async def test_recursion_limits_come_from_the_request_or_the_executor_default() -> None:
    graph, _ = chat_graph()
    limited = InProcExecutor(graphs={"chat": graph}, default_recursion_limit=1)
    _, outcome = await finish(limited.run(request("chat", {"question": "q"})))
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith("GraphRecursionError")

    graph, _ = chat_graph()
    limited.register("chat", graph)
    _, outcome = await finish(limited.run(request("chat", {"question": "q"}, recursion_limit=10)))
    assert outcome.status == "completed"


# ------------------------------------------------------------ pipelines


SAVE_ANSWER = BlockDefinition(
    id="write",
    name="Write",
    description="Write a line about a topic",
    kind="llm",
    input_keys=["topic"],
    output_keys=["line"],
    prompt_template="One line about {{ topic }}",
)
ASK_TITLE = BlockDefinition(
    id="ask_title",
    name="Ask",
    description="Ask for a title",
    kind="human",
    output_keys=["title"],
    prompt_template="What title should the post have?",
)


async def pipeline_runner(
    blocks: SqliteBlockStore, script: list[Any]
) -> tuple[PipelineRunner, InMemoryStore]:
    for block in (SAVE_ANSWER, ASK_TITLE):
        await blocks.save(block)
    memory = InMemoryStore()
    runner = PipelineRunner(
        blocks=blocks,
        executor=BlockExecutor(
            providers=ProviderRegistry.single(ScriptedProvider(script)), memory=memory
        ),
        checkpointer=InMemoryCheckpointer(),
        history=InMemoryRunHistory(),
    )
    return runner, memory


async def test_a_pipeline_runs_through_the_runner_for_the_calling_user(
    block_store: SqliteBlockStore,
) -> None:
    runner, memory = await pipeline_runner(block_store, ['{"line": "Ducks quack."}'])
    pipeline = Pipeline.from_data(
        {
            "id": "post",
            "name": "Post",
            "version": 3,
            "nodes": [
                {"id": "draft", "block_id": "write", "inputs": {"topic": "<<input.topic>>"}},
                {
                    "id": "keep",
                    "block_id": "save_memory",
                    "inputs": {"memory_key": "last_line", "memory_value": "<<draft.line>>"},
                },
            ],
            "edges": [{"from": "draft", "to": "keep"}],
        }
    )
    async with InProcExecutor(graphs={"post": pipeline}, runner=runner) as executor:
        handle = executor.run(request("post", {"topic": "ducks"}))
        events, outcome = await finish(handle)

    assert outcome.status == "completed", outcome.error
    assert {(e.graph_name, e.request_id) for e in events} == {("post", "req-42")}
    started = [e.node for e in events if e.type == "node_start"]  # type: ignore[union-attr]
    assert started == ["load_memory", "draft", "keep", "save_memory"]  # the runner's memory nodes
    # The caller's user is the run's user: memory is saved under their namespace ...
    saved = await memory.get(("users", "ada", "memory"), "last_line")
    assert saved is not None
    assert saved.value == "Ducks quack."
    # ... and the run is recorded for them, on the thread the port reported.
    assert outcome.thread_id is not None
    assert outcome.thread_id.startswith("post-")
    assert events[0].thread_id == outcome.thread_id  # type: ignore[union-attr]
    assert runner.history is not None
    (record,) = await runner.history.list(user_id="ada")
    assert (record.run_id, record.pipeline_id, record.thread_id) == (
        handle.run_id,
        "post",
        outcome.thread_id,
    )


async def test_a_pipeline_input_that_does_not_fit_is_a_failed_run(
    block_store: SqliteBlockStore,
) -> None:
    runner, _ = await pipeline_runner(block_store, [])
    pipeline = Pipeline.from_data(
        {
            "id": "post",
            "name": "Post",
            "nodes": [{"id": "draft", "block_id": "write", "inputs": {"topic": "<<input.topic>>"}}],
        }
    )
    executor = InProcExecutor(runner=runner)
    events, outcome = await finish(executor.run(request(pipeline, {"topc": "x"})))
    assert types(events) == ["run_start", "error", "done"]
    assert outcome.error is not None
    assert "input 'topic' is missing" in outcome.error


async def test_a_task_plan_pauses_and_is_resumed_through_the_port(
    block_store: SqliteBlockStore,
) -> None:
    runner, _ = await pipeline_runner(block_store, ['{"line": "Ducks quack."}'])
    plan = TaskPlan.from_data(
        {
            "plan_id": "titled",
            "entry_step_id": "draft",
            "steps": [
                {"step_id": "draft", "block_id": "write", "inputs": {"topic": "<<input.topic>>"}},
                {"step_id": "title", "block_id": "ask_title", "depends_on": ["draft"]},
            ],
        }
    )
    executor = InProcExecutor(graphs={"titled": plan}, runner=runner)
    events, paused = await finish(executor.run(request("titled", {"topic": "ducks"})))
    assert paused.status == "interrupted"
    assert paused.thread_id is not None
    assert [e.node for e in events if e.type == "interrupt"] == ["title"]  # type: ignore[union-attr]

    _, resumed = await finish(
        executor.run(request("titled", None, thread_id=paused.thread_id, resume="Quack"))
    )
    assert resumed.status == "completed"
    assert resumed.output is not None
    assert resumed.output["results"]["title"] == {"title": "Quack"}


# ------------------------------------------------------------ redaction


SECRET = "sk-CANARY-7f3a9c"


class CanaryRedactor:
    """A toy Redactor for one known secret (flowcore.secrets has the real one)."""

    def redact(self, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(SECRET, "[REDACTED]")
        if isinstance(value, dict):
            return {k: self.redact(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact(v) for v in value]
        return value

    def text_stream(self) -> CanaryStream:
        return CanaryStream()


class CanaryStream:
    def __init__(self) -> None:
        self.held = ""

    def feed(self, text: str) -> str:
        self.held = (self.held + text).replace(SECRET, "[REDACTED]")
        keep = len(SECRET) - 1  # a tail that may still grow into the secret
        safe, self.held = self.held[:-keep], self.held[-keep:]
        return safe

    def flush(self) -> str:
        rest, self.held = self.held, ""
        return rest


async def test_a_redactor_cleans_every_field_and_a_secret_split_across_deltas() -> None:
    half = len(SECRET) // 2
    provider = ChunkedProvider([['{"answer": "the key is ', SECRET[:half], SECRET[half:], '"}']])
    graph = answer_graph(provider)
    executor = InProcExecutor(graphs={"answer": graph}, redactor=CanaryRedactor())
    events, outcome = await finish(executor.run(request("answer", {"question": SECRET})))

    deltas = "".join(e.delta for e in events if e.type == "text_delta")  # type: ignore[union-attr]
    assert deltas == '{"answer": "the key is [REDACTED]"}'
    # The held-back tail is flushed before the call's usage report.
    kinds = types(events)
    assert kinds.index("usage_report") > max(i for i, k in enumerate(kinds) if k == "text_delta")
    assert outcome.output is not None
    assert outcome.output["results"]["answer"] == {"answer": "the key is [REDACTED]"}
    assert SECRET not in repr(events)
    assert SECRET not in repr(outcome)
