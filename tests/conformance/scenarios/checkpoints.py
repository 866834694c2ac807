"""Checkpointed threads: pending writes, update_state, history, time travel, durability, retry."""

import dataclasses
import itertools
import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, let_siblings_finish, scenario


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    note: str


def _thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def _append(name: str, calls: list[str] | None = None) -> Any:
    def node(state: State) -> dict[str, Any]:
        if calls is not None:
            calls.append(name)
        return {"log": [name]}

    return node


def _linear(lg: Any, names: list[str], checkpointer: Any, calls: list[str] | None = None) -> Any:
    builder = lg.StateGraph(State)
    for name in names:
        builder.add_node(name, _append(name, calls))
    builder.add_edge(lg.START, names[0])
    for left, right in itertools.pairwise(names):
        builder.add_edge(left, right)
    return builder.compile(checkpointer=checkpointer)


@scenario(tags=["pending-writes", "async"])
async def scenario_pending_writes_after_failure(lg: Any, rec: Recorder) -> None:
    """A sibling's write survives a failure in its superstep; the retry skips it.

    The failing node yields first so the sibling has finished when it raises
    (LangGraph drops the writes of siblings still running at that moment).
    """
    calls: list[str] = []
    failures = [True]

    async def steady(state: State) -> dict[str, Any]:
        calls.append("steady")
        return {"log": ["steady"]}

    async def flaky(state: State) -> dict[str, Any]:
        calls.append("flaky")
        await let_siblings_finish()
        if failures:
            failures.pop()
            raise KeyError("first attempt fails")
        return {"log": ["flaky"]}

    builder = lg.StateGraph(State)
    builder.add_node("steady", steady)
    builder.add_node("flaky", flaky)
    builder.add_node("after", _append("after", calls))
    builder.add_edge(lg.START, "steady")
    builder.add_edge(lg.START, "flaky")
    builder.add_edge(["steady", "flaky"], "after")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    await rec.ainvoke("failing run", graph, {"log": []}, config)
    await rec.astate("after failure", graph, config, tasks=True)
    await rec.ainvoke("resumed", graph, None, config)
    rec.record("calls", sorted(calls))


@scenario(tags=["update_state"])
def scenario_update_state_plain(lg: Any, rec: Recorder) -> None:
    """update_state goes through reducers and makes a new checkpoint."""
    graph = _linear(lg, ["a", "b"], lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": []}, config)
    graph.update_state(config, {"log": ["manual"], "note": "set"})
    rec.state("after update", graph, config, metadata=True)
    rec.invoke("next run appends", graph, {"log": ["again"]}, config)


@scenario(tags=["update_state"])
def scenario_update_state_as_node(lg: Any, rec: Recorder) -> None:
    """update_state(as_node=a) makes the write count as a's: next is a's successor."""
    graph = _linear(lg, ["a", "b", "c"], lg.InMemorySaver())
    config = _thread("t")
    graph.update_state(config, {"log": ["as a"]}, as_node="a")
    rec.state("after update", graph, config, metadata=True)
    rec.invoke("continued", graph, None, config)


@scenario(tags=["update_state", "breakpoint"])
def scenario_update_state_as_node_skips(lg: Any, rec: Recorder) -> None:
    """At a breakpoint before b, updating as b skips b: the run continues with c."""
    calls: list[str] = []
    builder = lg.StateGraph(State)
    for name in ["a", "b", "c"]:
        builder.add_node(name, _append(name, calls))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    graph = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    config = _thread("t")
    graph.invoke({"log": []}, config)
    graph.update_state(config, {"log": ["instead of b"]}, as_node="b")
    rec.state("after update", graph, config)
    rec.invoke("continued", graph, None, config)
    rec.record("calls", calls)


@scenario(tags=["history"])
def scenario_state_history(lg: Any, rec: Recorder) -> None:
    """get_state_history lists every checkpoint newest first with step, source, next."""
    graph = _linear(lg, ["a", "b", "c"], lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": []}, config)
    rec.history("history", graph, config)
    rec.history("limit 2", graph, config, limit=2)


@scenario(tags=["history"])
def scenario_history_two_runs(lg: Any, rec: Recorder) -> None:
    """A second run on the same thread continues from the first run's state."""
    graph = _linear(lg, ["a", "b"], lg.InMemorySaver())
    config = _thread("t")
    rec.invoke("run 1", graph, {"log": ["first"]}, config)
    rec.invoke("run 2", graph, {"log": ["second"]}, config)
    rec.history("history", graph, config)


@scenario(tags=["time-travel"])
def scenario_time_travel_replay(lg: Any, rec: Recorder) -> None:
    """invoke(None) from a past checkpoint re-runs the nodes after it."""
    calls: list[str] = []
    graph = _linear(lg, ["a", "b", "c"], lg.InMemorySaver(), calls)
    config = _thread("t")
    graph.invoke({"log": []}, config)
    history = list(graph.get_state_history(config))
    before_b = next(s for s in history if s.next == ("b",))
    calls.clear()
    rec.invoke("replay", graph, None, before_b.config)
    rec.record("replayed calls", calls)
    rec.state("latest", graph, config)
    rec.record("history length", len(list(graph.get_state_history(config))))


@scenario(tags=["time-travel", "update_state"])
def scenario_time_travel_fork(lg: Any, rec: Recorder) -> None:
    """update_state on a past checkpoint forks the thread; the fork continues from it."""
    graph = _linear(lg, ["a", "b", "c"], lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": []}, config)
    history = list(graph.get_state_history(config))
    before_c = next(s for s in history if s.next == ("c",))
    forked = graph.update_state(before_c.config, {"note": "forked"})
    rec.state("fork", graph, forked, metadata=True)
    rec.invoke("fork run", graph, None, forked)
    rec.state("latest", graph, config)


@scenario(tags=["time-travel"])
def scenario_get_state_at_checkpoint(lg: Any, rec: Recorder) -> None:
    """get_state with a checkpoint_id returns that checkpoint, not the latest."""
    graph = _linear(lg, ["a", "b"], lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": []}, config)
    for snapshot in graph.get_state_history(config):
        rec.state(f"step {snapshot.metadata['step']}", graph, snapshot.config, metadata=True)


@scenario(tags=["checkpoint"])
def scenario_get_state_empty_thread(lg: Any, rec: Recorder) -> None:
    """get_state on a thread that never ran: empty values, nothing next."""
    graph = _linear(lg, ["a"], lg.InMemorySaver())
    rec.state("empty", graph, _thread("never"))
    rec.history("history", graph, _thread("never"))


@scenario(tags=["checkpoint"])
def scenario_threads_are_separate(lg: Any, rec: Recorder) -> None:
    """Two thread ids on one saver keep separate states."""
    graph = _linear(lg, ["a"], lg.MemorySaver())
    graph.invoke({"log": ["one"]}, _thread("1"))
    graph.invoke({"log": ["two"]}, _thread("2"))
    graph.invoke({"log": ["one again"]}, _thread("1"))
    rec.state("thread 1", graph, _thread("1"))
    rec.state("thread 2", graph, _thread("2"))


@scenario(tags=["durability"])
def scenario_durability_modes(lg: Any, rec: Recorder) -> None:
    """durability= sync | async | exit: the final state and what the history keeps."""
    for mode in ["sync", "async", "exit"]:
        graph = _linear(lg, ["a", "b", "c"], lg.InMemorySaver())
        config = _thread(mode)
        rec.invoke(f"{mode} invoke", graph, {"log": []}, config, durability=mode)
        rec.state(f"{mode} state", graph, config)
        rec.record(
            f"{mode} history steps",
            [s.metadata["step"] for s in graph.get_state_history(config)],
        )


@scenario(tags=["durability", "interrupt"])
def scenario_durability_exit_with_interrupt(lg: Any, rec: Recorder) -> None:
    """With durability="exit" an interrupted run still saves where it paused."""

    def ask(state: State) -> dict[str, Any]:
        return {"note": lg.interrupt("?")}

    builder = lg.StateGraph(State)
    builder.add_node("a", _append("a"))
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    rec.invoke("first", graph, {"log": []}, config, durability="exit")
    rec.state("paused", graph, config)
    rec.invoke("resumed", graph, lg.Command(resume="done"), config, durability="exit")


@scenario(tags=["retry"])
def scenario_retry_policy_recovers(lg: Any, rec: Recorder) -> None:
    """A node failing twice under max_attempts=3 succeeds on its third attempt."""
    attempts: list[int] = []

    class Flaky(Exception):
        pass

    def flaky(state: State) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 3:
            raise Flaky("not yet")
        return {"log": [f"ok after {len(attempts)}"]}

    builder = lg.StateGraph(State)
    builder.add_node(
        "flaky",
        flaky,
        retry_policy=lg.RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False),
    )
    builder.add_edge(lg.START, "flaky")
    rec.invoke("invoke", builder.compile(), {"log": []})
    rec.record("attempts", len(attempts))


@scenario(tags=["retry", "error"])
def scenario_retry_policy_exhausted(lg: Any, rec: Recorder) -> None:
    """Attempts beyond max_attempts are not made; the last error propagates."""
    attempts: list[int] = []

    class Down(Exception):
        pass

    def down(state: State) -> dict[str, Any]:
        attempts.append(1)
        raise Down("still down")

    builder = lg.StateGraph(State)
    builder.add_node(
        "down",
        down,
        retry_policy=lg.RetryPolicy(max_attempts=2, initial_interval=0.001, jitter=False),
    )
    builder.add_edge(lg.START, "down")
    rec.invoke("invoke", builder.compile(), {"log": []})
    rec.record("attempts", len(attempts))


def _always_value_error(attempts: list[int]) -> Any:
    def bad(state: State) -> dict[str, Any]:
        attempts.append(1)
        raise ValueError("bad value")

    return bad


@scenario(tags=["retry"])
def scenario_retry_policy_retry_on(lg: Any, rec: Recorder) -> None:
    """retry_on decides: a ValueError is not retried by default; a predicate can allow it."""
    for label, policy in [
        ("default", lg.RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False)),
        (
            "predicate",
            lg.RetryPolicy(
                max_attempts=3,
                initial_interval=0.001,
                jitter=False,
                retry_on=lambda exc: isinstance(exc, ValueError),
            ),
        ),
        (
            "class",
            lg.RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False, retry_on=KeyError),
        ),
    ]:
        attempts: list[int] = []
        builder = lg.StateGraph(State)
        builder.add_node("bad", _always_value_error(attempts), retry_policy=policy)
        builder.add_edge(lg.START, "bad")
        rec.invoke(label, builder.compile(), {"log": []})
        rec.record(f"{label} attempts", len(attempts))


@scenario(tags=["update_state", "error"])
def scenario_update_state_ambiguous(lg: Any, rec: Recorder) -> None:
    """Without as_node, an update after a superstep of two nodes is ambiguous."""
    builder = lg.StateGraph(State)
    builder.add_node("left", _append("left"))
    builder.add_node("right", _append("right"))
    builder.add_edge(lg.START, "left")
    builder.add_edge(lg.START, "right")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": []}, config)
    rec.raises("ambiguous", graph.update_state, config, {"note": "x"})
    graph.update_state(config, {"note": "as left"}, as_node="left")
    rec.state("as left", graph, config, metadata=True)


@scenario(tags=["update_state"])
def scenario_update_state_empty_thread(lg: Any, rec: Recorder) -> None:
    """update_state on a thread that never ran, then invoke(None) from there."""
    calls: list[str] = []
    graph = _linear(lg, ["a", "b"], lg.InMemorySaver(), calls)
    config = _thread("t")
    rec.raises("update", graph.update_state, config, {"log": ["seed"]})
    rec.state("state", graph, config, metadata=True)
    rec.invoke("invoke none", graph, None, config)
    rec.record("calls", calls)


@scenario(tags=["history"])
def scenario_history_filters(lg: Any, rec: Recorder) -> None:
    """get_state_history with filter= on metadata and before= a checkpoint."""
    graph = _linear(lg, ["a", "b"], lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": []}, config)
    graph.invoke({"log": ["more"]}, config)
    rec.history("inputs only", graph, config, filter={"source": "input"})
    rec.history("step 1", graph, config, filter={"step": 1})
    middle = list(graph.get_state_history(config))[3]
    rec.history("before the 4th newest", graph, config, before=middle.config)


@scenario(tags=["schema", "dataclass", "checkpoint"])
def scenario_dataclass_state_checkpointed(lg: Any, rec: Recorder) -> None:
    """A dataclass state through get_state and update_state."""

    @dataclasses.dataclass
    class Form:
        name: str = ""
        steps: Annotated[list[str], operator.add] = dataclasses.field(default_factory=list)

    def fill(state: Form) -> dict[str, Any]:
        return {"steps": [f"fill {state.name}"]}

    builder = lg.StateGraph(Form)
    builder.add_node("fill", fill)
    builder.add_edge(lg.START, "fill")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    rec.invoke("invoke", graph, {"name": "ada"}, config)
    graph.update_state(config, {"steps": ["manual"], "name": "grace"})
    rec.state("state", graph, config)
    rec.invoke("again", graph, {"name": "lin"}, config)


@scenario(tags=["retry", "async"])
async def scenario_retry_policy_async(lg: Any, rec: Recorder) -> None:
    """A retried async node next to a sibling: the sibling runs once."""
    calls: list[str] = []

    class Glitch(Exception):
        pass

    async def glitchy(state: State) -> dict[str, Any]:
        calls.append("glitchy")
        if calls.count("glitchy") < 2:
            raise Glitch("once")
        return {"log": ["glitchy"]}

    async def sibling(state: State) -> dict[str, Any]:
        calls.append("sibling")
        return {"log": ["sibling"]}

    builder = lg.StateGraph(State)
    builder.add_node(
        "glitchy",
        glitchy,
        retry_policy=lg.RetryPolicy(max_attempts=2, initial_interval=0.001, jitter=False),
    )
    builder.add_node("sibling", sibling)
    builder.add_edge(lg.START, "glitchy")
    builder.add_edge(lg.START, "sibling")
    await rec.ainvoke("ainvoke", builder.compile(), {"log": []})
    rec.record("calls", sorted(calls))


@scenario(tags=["durability", "error"])
def scenario_durability_exit_with_failure(lg: Any, rec: Recorder) -> None:
    """durability="exit": a failing run saves what it had when it stopped."""
    calls: list[str] = []

    def boom(state: State) -> dict[str, Any]:
        calls.append("boom")
        raise KeyError("boom")

    builder = lg.StateGraph(State)
    builder.add_node("a", _append("a", calls))
    builder.add_node("boom", boom)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "boom")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    rec.invoke("run", graph, {"log": []}, config, durability="exit")
    rec.state("state", graph, config, tasks=True)
    rec.record("history steps", [s.metadata["step"] for s in graph.get_state_history(config)])


@scenario(tags=["pending-writes", "async", "stream"])
async def scenario_failure_stream_keeps_sibling_update(lg: Any, rec: Recorder) -> None:
    """A sibling that finished before a failure still shows in the updates stream."""

    async def quick(state: State) -> dict[str, Any]:
        return {"log": ["quick"]}

    async def late_failure(state: State) -> dict[str, Any]:
        await let_siblings_finish()
        raise KeyError("late")

    builder = lg.StateGraph(State)
    builder.add_node("quick", quick)
    builder.add_node("late_failure", late_failure)
    builder.add_edge(lg.START, "quick")
    builder.add_edge(lg.START, "late_failure")
    graph = builder.compile()
    await rec.astream("stream", graph, {"log": []}, stream_mode=["updates", "values"])
