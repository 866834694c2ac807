"""Spec: LangGraph-style graphs run through the executor port like native ones.

A ``flowcore.compat.langgraph.StateGraph(...).compile()`` is a target of
``InProcExecutor``, given directly or registered under a name. Its runs
stream AiEvents (mapped from flowcore's one event stream, which the compat
run loop emits too), end with exactly one ``done``, report token usage from
the chat messages their nodes return, surface ``interrupt()`` as pending
questions that ``RunOptions(resume=...)`` answers (``Command(resume=...)``
underneath), and can be cancelled. With a ``history`` every run is recorded
and ``flowcore runs`` shows it. A redactor keeps a secret that a compat
node returns out of the AiEvents, the outcome, the history and the CLI.

The executor-port conformance kit runs against compat targets too.
"""

from __future__ import annotations

import asyncio
import io
import json
import operator
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import pytest

from flowcore import START as NATIVE_START
from flowcore import Graph
from flowcore.cli.app import main
from flowcore.compat.langgraph import (
    END,
    START,
    AIMessage,
    InMemorySaver,
    Send,
    StateGraph,
    get_stream_writer,
    interrupt,
)
from flowcore.history import InMemoryRunHistory, SqliteRunHistory
from flowcore.interrupts import Resume
from flowcore.port import (
    AiEvent,
    Caller,
    EventGraph,
    InProcExecutor,
    RunHandle,
    RunOptions,
    RunOutcome,
    RunRequest,
    UsageTotals,
)
from flowcore.secrets import SecretRedactor
from flowcore.testing import ExecutorConformance, KitTargets

from .compat_graphs import MODEL_USAGE, build_compat_kit_graphs, compat_kit_targets

GUARD = 5.0
CALLER = Caller(request_id="req-7", trace_id="trace-7", user_id="ada")
SECRET = "sk-compat-CANARY-51d0e4a9"

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


def request(target: Any, inputs: Any = None, **options: Any) -> RunRequest:
    return RunRequest(target, inputs, CALLER, RunOptions(**options))


async def finish(handle: RunHandle) -> tuple[list[AiEvent], RunOutcome]:
    async with asyncio.timeout(GUARD):
        events = [event async for event in handle]
        return events, await handle.final


def types(events: list[AiEvent]) -> list[str]:
    return [e.type for e in events]


def nodes(events: list[AiEvent], kind: str) -> list[str]:
    return [str(getattr(e, "node", "")) for e in events if e.type == kind]


# ----------------------------------------------------------- the port kit


class TestInProcExecutorOnCompatGraphs(ExecutorConformance):
    """The kit, with its four targets written as LangGraph-style graphs."""

    @pytest.fixture
    async def executor(self) -> AsyncIterator[InProcExecutor]:
        async with InProcExecutor() as executor:
            yield executor

    @pytest.fixture
    def kit_targets(self) -> KitTargets:
        graphs = build_compat_kit_graphs()
        return compat_kit_targets(dict(graphs), graphs)

    async def test_llm_calls_and_tool_calls_carry_their_own_ids(
        self, executor: InProcExecutor, kit_targets: KitTargets
    ) -> None:
        """Compat nodes stream no text; what they report is one usage report per model
        request, from the run's usage meter, each with an invocation id of its own, and
        the totals in ``final.usage`` (no cost: the scripted model reports none)."""
        target = kit_targets.simple
        _, events, final = await self._run(executor, self._request(target))

        reports = [e for e in events if e.type == "usage_report"]
        calls = [getattr(r, "invocation_id", "") for r in reports]
        assert len(calls) == 2, calls
        assert all(calls), calls
        assert len(set(calls)) == 2, calls
        assert [
            (getattr(r, "input_tokens", 0), getattr(r, "output_tokens", 0)) for r in reports
        ] == [*MODEL_USAGE]
        assert {getattr(r, "model", "") for r in reports} == {"kit-model"}
        assert final.usage == UsageTotals(
            sum(i for i, _ in MODEL_USAGE), sum(o for _, o in MODEL_USAGE), None
        )


class TestInProcExecutorOnRegisteredCompatGraphs(ExecutorConformance):
    """The same kit, naming the compat graphs by the names they are registered under."""

    @pytest.fixture
    async def executor(self, compat_graphs: dict[str, Any]) -> AsyncIterator[InProcExecutor]:
        async with InProcExecutor(graphs=compat_graphs) as executor:
            yield executor

    @pytest.fixture
    def compat_graphs(self) -> dict[str, Any]:
        return dict(build_compat_kit_graphs())

    @pytest.fixture
    def kit_targets(self, compat_graphs: dict[str, Any]) -> KitTargets:
        return compat_kit_targets({name: name for name in compat_graphs}, compat_graphs)

    test_llm_calls_and_tool_calls_carry_their_own_ids = (
        TestInProcExecutorOnCompatGraphs.test_llm_calls_and_tool_calls_carry_their_own_ids
    )


# ------------------------------------------------------- what a run shows


class Fan(TypedDict, total=False):
    topics: list[str]
    notes: Annotated[list[str], operator.add]
    report: str


def _plan(state: Fan) -> dict[str, Any]:
    get_stream_writer()({"planned": len(state["topics"])})
    return {}


def _fan_out(state: Fan) -> list[Send]:
    return [Send("research", {"topics": [t]}) for t in state["topics"]]


def _research(state: Fan) -> dict[str, Any]:
    return {"notes": [f"note on {state['topics'][0]}"]}


def _write(state: Fan) -> dict[str, Any]:
    return {"report": "; ".join(state["notes"])}


def fan_graph() -> Any:
    graph = StateGraph(Fan)
    graph.add_node("plan", _plan)
    graph.add_node("research", _research)
    graph.add_node("write", _write)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", _fan_out, ["research"])
    graph.add_edge("research", "write")
    graph.add_edge("write", END)
    return graph.compile(name="fan")


async def test_a_compat_graph_is_an_event_graph_and_streams_every_task() -> None:
    graph = fan_graph()
    assert isinstance(graph, EventGraph)
    async with InProcExecutor() as executor:
        events, outcome = await finish(executor.run(request(graph, {"topics": ["a", "b"]})))

    assert types(events)[0] == "run_start"
    assert types(events)[-1] == "done"
    assert types(events).count("done") == 1
    # One start and one end per task: the two Send tasks of research included.
    assert nodes(events, "node_start") == ["plan", "research", "research", "write"]
    assert sorted(nodes(events, "node_end")) == ["plan", "research", "research", "write"]
    assert {e.graph_name for e in events} == {"fan"}
    assert {e.graph_version for e in events} == {graph.version}
    assert {(e.request_id, e.trace_id) for e in events} == {("req-7", "trace-7")}
    assert outcome.status == "completed"
    assert outcome.output == {
        "topics": ["a", "b"],
        "notes": ["note on a", "note on b"],
        "report": "note on a; note on b",
    }


async def test_nodes_see_the_callers_ids_in_their_config_metadata() -> None:
    seen: dict[str, Any] = {}

    class S(TypedDict, total=False):
        x: int

    def look(state: S, config: RunnableConfig) -> dict[str, Any]:
        seen.update(config["metadata"])
        return {"x": 1}

    graph = StateGraph(S)
    graph.add_node("look", look)
    graph.add_edge(START, "look")
    async with InProcExecutor() as executor:
        _, outcome = await finish(executor.run(request(graph.compile(), {"x": 0})))

    assert outcome.status == "completed"
    assert {k: seen[k] for k in ("request_id", "trace_id", "user_id")} == {
        "request_id": "req-7",
        "trace_id": "trace-7",
        "user_id": "ada",
    }


class Ask(TypedDict, total=False):
    draft: str
    verdict: Any
    second: Any


def _review(state: Ask) -> dict[str, Any]:
    return {"verdict": interrupt({"question": "ship it?", "draft": state["draft"]})}


def _double_check(state: Ask) -> dict[str, Any]:
    return {"second": interrupt("sure?")}


def asking_graph(*, both: bool = False) -> Any:
    graph = StateGraph(Ask)
    graph.add_node("review", _review)
    graph.add_edge(START, "review")
    if both:
        graph.add_node("double_check", _double_check)
        graph.add_edge(START, "double_check")
    return graph.compile(checkpointer=InMemorySaver(), name="asking")


async def test_an_interrupt_is_a_pending_question_and_resume_answers_it() -> None:
    graph = asking_graph()
    async with InProcExecutor(graphs={"asking": graph}) as executor:
        events, paused = await finish(
            executor.run(request("asking", {"draft": "v1"}, thread_id="t-ask"))
        )
        assert paused.status == "interrupted"
        (question,) = paused.interrupts
        assert (question.node, question.value) == (
            "review",
            {"question": "ship it?", "draft": "v1"},
        )
        (asked,) = [e for e in events if e.type == "interrupt"]
        assert getattr(asked, "interrupt_id", None) == question.interrupt_id
        assert paused.thread_id == "t-ask"

        events, done = await finish(
            executor.run(request("asking", None, thread_id="t-ask", resume="yes"))
        )

    assert done.status == "completed"
    assert done.output == {"draft": "v1", "verdict": "yes"}
    assert nodes(events, "node_start") == ["review"]  # only the paused node runs again


async def test_two_questions_are_answered_by_interrupt_id() -> None:
    graph = asking_graph(both=True)
    async with InProcExecutor() as executor:
        _, paused = await finish(executor.run(request(graph, {"draft": "v2"}, thread_id="t-two")))
        assert sorted(q.node for q in paused.interrupts) == ["double_check", "review"]
        answers = {q.interrupt_id: f"answer to {q.node}" for q in paused.interrupts}
        _, done = await finish(
            executor.run(request(graph, None, thread_id="t-two", resume=Resume(by_id=answers)))
        )

    assert done.status == "completed"
    assert done.output == {
        "draft": "v2",
        "verdict": "answer to review",
        "second": "answer to double_check",
    }


async def test_a_failing_compat_node_fails_the_run_with_its_error() -> None:
    class S(TypedDict, total=False):
        x: int

    def broken(state: S) -> dict[str, Any]:
        raise ValueError("the compat node broke")

    graph = StateGraph(S)
    graph.add_node("broken", broken)
    graph.add_edge(START, "broken")
    async with InProcExecutor() as executor:
        events, outcome = await finish(executor.run(request(graph.compile(), {"x": 1})))

    assert types(events) == ["run_start", "node_start", "node_error", "error", "done"]
    assert outcome.status == "failed"
    assert outcome.error == "ValueError: the compat node broke"


async def test_cancel_stops_a_compat_run_with_one_cancelled_done() -> None:
    started = asyncio.Event()

    class S(TypedDict, total=False):
        x: int

    async def forever(state: S) -> dict[str, Any]:
        started.set()
        await asyncio.Event().wait()
        return {}

    graph = StateGraph(S)
    graph.add_node("forever", forever)
    graph.add_edge(START, "forever")
    async with InProcExecutor() as executor:
        handle = executor.run(request(graph.compile(), {"x": 1}))
        async with asyncio.timeout(GUARD):
            await started.wait()
        handle.cancel()
        events, outcome = await finish(handle)

    assert types(events) == ["run_start", "node_start", "done"]
    assert outcome.status == "cancelled"


async def test_a_resume_without_a_checkpointer_is_a_failed_run() -> None:
    graph = StateGraph(Ask)
    graph.add_node("review", _review)
    graph.add_edge(START, "review")
    async with InProcExecutor() as executor:
        events, outcome = await finish(
            executor.run(request(graph.compile(), None, thread_id="t", resume="yes"))
        )

    assert types(events)[-2:] == ["error", "done"]
    assert outcome.status == "failed"
    assert "checkpointer" in str(outcome.error)


# ------------------------------------------------------- history and CLI


async def test_compat_runs_are_recorded_in_the_history() -> None:
    history = InMemoryRunHistory()
    graph = fan_graph()
    async with InProcExecutor(history=history) as executor:
        handle = executor.run(request(graph, {"topics": ["x"]}))
        await finish(handle)

    record = await history.get(handle.run_id)
    assert (record.pipeline_id, record.pipeline_version) == ("fan", graph.version)
    assert (record.user_id, record.status) == ("ada", "completed")
    assert record.inputs == {"topics": ["x"]}
    assert [(n.node, n.status) for n in record.nodes] == [
        ("plan", "completed"),
        ("research", "completed"),
        ("write", "completed"),
    ]
    assert record.nodes_by_name["research"].outputs == {"notes": ["note on x"]}
    assert record.final_state == {"topics": ["x"], "notes": ["note on x"], "report": "note on x"}


async def test_a_paused_and_a_failed_compat_run_are_recorded_as_such() -> None:
    history = InMemoryRunHistory()
    graphs = build_compat_kit_graphs()
    async with InProcExecutor(graphs=graphs, history=history) as executor:
        await finish(executor.run(request("kit.pausing", {"draft": "d"}, thread_id="t-rec")))
        await finish(executor.run(request("kit.failing", {})))

    (paused_run,) = await history.list(status="interrupted")
    (failed_run,) = await history.list(status="failed")
    assert paused_run.thread_id == "t-rec"
    assert paused_run.interrupts == ({"question": "approve the draft?", "draft": "d"},)
    assert [(n.node, n.status) for n in failed_run.nodes] == [
        ("prepare", "completed"),
        ("explode", "failed"),
    ]
    assert failed_run.errors == (
        "KitFailure: the compat kit.failing failed on purpose in node 'explode'",
    )


def _cli(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    return out.getvalue()


async def test_flowcore_runs_shows_compat_runs(tmp_path: Path) -> None:
    db = tmp_path / "flowcore.db"
    graph = fan_graph()
    async with SqliteRunHistory(db) as history, InProcExecutor(history=history) as executor:
        handle = executor.run(request(graph, {"topics": ["cli"]}))
        await finish(handle)

    listed = await asyncio.to_thread(_cli, "runs", "list", "--db", str(db), "--json")
    assert [(r["run_id"], r["pipeline_id"], r["status"]) for r in json.loads(listed)] == [
        (handle.run_id, "fan", "completed")
    ]
    shown = await asyncio.to_thread(_cli, "runs", "show", handle.run_id, "--db", str(db))
    assert shown.startswith(f"run {handle.run_id} · pipeline fan v{graph.version} · user ada")
    assert "note on cli" in shown
    assert "completed: run" in shown


# -------------------------------------------------------------- redaction


class Leaky(TypedDict, total=False):
    question: str
    answer: str
    messages: list[Any]


def _leak(state: Leaky) -> dict[str, Any]:
    get_stream_writer()(f"progress with {SECRET}")
    message = AIMessage(
        f"the key is {SECRET}", id="m1", usage_metadata={"input_tokens": 3, "output_tokens": 2}
    )
    return {"answer": f"the key is {SECRET}", "messages": [message]}


def _leak_and_ask(state: Leaky) -> dict[str, Any]:
    interrupt({"question": f"is {SECRET} right?"})
    return {}


def _leak_and_fail(state: Leaky) -> dict[str, Any]:
    raise RuntimeError(f"could not use {SECRET}")


def leaky_graph(third: Any) -> Any:
    graph = StateGraph(Leaky)
    graph.add_node("leak", _leak)
    graph.add_node("third", third)
    graph.add_edge(START, "leak")
    graph.add_edge("leak", "third")
    return graph.compile(checkpointer=InMemorySaver(), name="leaky")


@pytest.mark.parametrize("third", [_leak_and_ask, _leak_and_fail], ids=["pauses", "fails"])
async def test_a_secret_a_compat_node_returns_reaches_no_event_record_or_cli_output(
    third: Any, tmp_path: Path
) -> None:
    db = tmp_path / "flowcore.db"
    redactor = SecretRedactor([SECRET])
    async with SqliteRunHistory(db) as history:
        async with InProcExecutor(redactor=redactor, history=history) as executor:
            handle = executor.run(
                request(leaky_graph(third), {"question": "q"}, thread_id="t-leak")
            )
            events, outcome = await finish(handle)
        record = await history.get(handle.run_id)

    assert outcome.status in ("interrupted", "failed")
    # The node's output really held the secret: redacted, not dropped.
    assert record.nodes_by_name["leak"].outputs is not None
    assert "[REDACTED]" in repr(record.nodes_by_name["leak"].outputs)
    assert SECRET not in repr(events)
    assert SECRET not in repr(outcome)
    assert SECRET not in repr(record)
    assert SECRET.encode() not in db.read_bytes()
    # The CLI's own redactor does not know this secret: what it prints is clean at the source.
    shown = await asyncio.to_thread(_cli, "runs", "show", handle.run_id, "--db", str(db), "--json")
    listed = await asyncio.to_thread(_cli, "runs", "list", "--db", str(db))
    assert "[REDACTED]" in shown
    assert SECRET not in shown + listed


async def test_recorded_compat_runs_count_the_tokens_their_nodes_were_billed(
    tmp_path: Path,
) -> None:
    db = tmp_path / "flowcore.db"
    graphs = build_compat_kit_graphs()
    async with SqliteRunHistory(db) as history, InProcExecutor(history=history) as executor:
        handle = executor.run(request(graphs["kit.simple"], {"question": "q"}))
        _, outcome = await finish(handle)
        record = await history.get(handle.run_id)

    tokens_in, tokens_out = (sum(n[i] for n in MODEL_USAGE) for i in (0, 1))
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (tokens_in, tokens_out)
    assert (record.input_tokens, record.output_tokens) == (tokens_in, tokens_out)
    research = record.nodes_by_name["research"]
    assert (research.input_tokens, research.output_tokens) == (tokens_in, tokens_out)
    assert record.nodes_by_name["summarize"].total_tokens == 0
    listed = await asyncio.to_thread(_cli, "runs", "list", "--db", str(db))
    assert listed.splitlines()[-1].split()[-1] == str(tokens_in + tokens_out)


async def test_flowcore_resume_says_an_app_recorded_compat_thread_is_resumed_from_the_app(
    tmp_path: Path,
) -> None:
    db = tmp_path / "flowcore.db"
    async with SqliteRunHistory(db) as history, InProcExecutor(history=history) as executor:
        await finish(executor.run(request(asking_graph(), {"draft": "d"}, thread_id="t-app")))

    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(
        main, ["resume", "t-app", "--value", "yes", "--db", str(db)], stdout=out, stderr=err
    )

    assert code == 2
    assert "thread 't-app' belongs to a run of graph 'asking'" in err.getvalue()
    assert "resume it from that app" in err.getvalue()


async def test_native_graph_runs_are_recorded_the_same_way() -> None:
    class Count(TypedDict, total=False):
        n: int

    native = Graph(Count, name="counter").add_node("inc", lambda s: {"n": s["n"] + 1})
    native.add_edge(NATIVE_START, "inc")
    graph = native.compile(version="7")
    history = InMemoryRunHistory()
    async with InProcExecutor(history=history) as executor:
        handle = executor.run(request(graph, {"n": 1}))
        await finish(handle)

    record = await history.get(handle.run_id)
    assert (record.pipeline_id, record.pipeline_version, record.status) == (
        "counter",
        "7",
        "completed",
    )
    assert [(n.node, n.outputs) for n in record.nodes] == [("inc", {"n": 2})]
