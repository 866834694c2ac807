"""Joins and fan-in: list-of-sources edges wait for all, separate edges fire per superstep."""

import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, scenario


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    value: str


def _append(name: str, calls: list[str] | None = None) -> Any:
    def node(state: Log) -> dict[str, Any]:
        if calls is not None:
            calls.append(name)
        return {"log": [name]}

    return node


@scenario(tags=["diamond"])
def scenario_diamond(lg: Any, rec: Recorder) -> None:
    """a fans out to b and c, both lead to d by separate edges: d runs once."""
    calls: list[str] = []
    builder = lg.StateGraph(Log)
    for name in ["a", "b", "c", "d"]:
        builder.add_node(name, _append(name, calls))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge("b", "d")
    builder.add_edge("c", "d")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": []})
    rec.record("calls", sorted(calls))
    rec.stream("stream", graph, {"log": []}, stream_mode=["updates", "values"])


@scenario(tags=["join"])
def scenario_join_waits_for_all(lg: Any, rec: Recorder) -> None:
    """add_edge([b, c2], d): d waits for the longer branch and runs once."""
    calls: list[str] = []
    builder = lg.StateGraph(Log)
    for name in ["a", "b", "c1", "c2", "d"]:
        builder.add_node(name, _append(name, calls))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c1")
    builder.add_edge("c1", "c2")
    builder.add_edge(["b", "c2"], "d")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": []})
    rec.record("d runs", calls.count("d"))
    rec.stream("stream", graph, {"log": []}, stream_mode=["updates", "values"])


@scenario(tags=["join"])
def scenario_separate_edges_run_twice(lg: Any, rec: Recorder) -> None:
    """Separate edges b -> d and c2 -> d trigger d in two supersteps: d runs twice."""
    calls: list[str] = []
    builder = lg.StateGraph(Log)
    for name in ["a", "b", "c1", "c2", "d"]:
        builder.add_node(name, _append(name, calls))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c1")
    builder.add_edge("c1", "c2")
    builder.add_edge("b", "d")
    builder.add_edge("c2", "d")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": []})
    rec.record("d runs", calls.count("d"))
    rec.stream("stream", graph, {"log": []}, stream_mode=["updates", "values"])


@scenario(tags=["join"])
def scenario_join_from_start_branches(lg: Any, rec: Recorder) -> None:
    """Three branches from START joined by one list edge; the join sees all writes."""
    seen: list[Any] = []

    def join(state: Log) -> dict[str, Any]:
        seen.append(list(state["log"]))
        return {"value": "joined"}

    builder = lg.StateGraph(Log)
    for name in ["x", "y", "z"]:
        builder.add_node(name, _append(name))
        builder.add_edge(lg.START, name)
    builder.add_node("join", join)
    builder.add_edge(["x", "y", "z"], "join")
    rec.invoke("invoke", builder.compile(), {"log": ["start"]})
    rec.record("join saw", seen)


@scenario(tags=["join"])
def scenario_two_joins_same_target(lg: Any, rec: Recorder) -> None:
    """Two list edges into one node are two independent joins: the node runs for each."""
    calls: list[str] = []
    builder = lg.StateGraph(Log)
    for name in ["a", "b", "c", "c2", "t"]:
        builder.add_node(name, _append(name, calls))
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    builder.add_edge(lg.START, "c")
    builder.add_edge("c", "c2")
    builder.add_edge(["a", "b"], "t")
    builder.add_edge(["b", "c2"], "t")
    rec.invoke("invoke", builder.compile(), {"log": []})
    rec.record("t runs", calls.count("t"))


@scenario(tags=["reducer", "order"])
def scenario_reducer_write_order(lg: Any, rec: Recorder) -> None:
    """Parallel writes reach the reducer in node-name order, not declaration order."""
    builder = lg.StateGraph(Log)
    for name in ["zeta", "alpha", "mid", "Beta"]:
        builder.add_node(name, _append(name))
        builder.add_edge(lg.START, name)
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": []})
    rec.stream("stream", graph, {"log": []}, stream_mode=["updates", "values"])


@scenario(tags=["reducer", "order"])
def scenario_reducer_order_across_steps(lg: Any, rec: Recorder) -> None:
    """Within each superstep writes go in node-name order; supersteps go in order."""
    builder = lg.StateGraph(Log)
    for name in ["s1_b", "s1_a", "s2_z", "s2_y"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "s1_b")
    builder.add_edge(lg.START, "s1_a")
    builder.add_edge("s1_b", "s2_z")
    builder.add_edge("s1_a", "s2_y")
    rec.invoke("invoke", builder.compile(), {"log": []})


@scenario(tags=["reducer"])
def scenario_custom_reducer(lg: Any, rec: Recorder) -> None:
    """A custom reducer function folds parallel writes in node-name order."""

    def keep_longest(left: str, right: str) -> str:
        return right if len(right) >= len(left) else left

    class State(TypedDict, total=False):
        best: Annotated[str, keep_longest]
        trail: Annotated[list[str], operator.add]

    def writer(word: str) -> Any:
        def node(state: State) -> dict[str, Any]:
            return {"best": word, "trail": [word]}

        return node

    builder = lg.StateGraph(State)
    builder.add_node("b_node", writer("four"))
    builder.add_node("a_node", writer("five5"))
    builder.add_node("c_node", writer("six666"))
    for name in ["b_node", "a_node", "c_node"]:
        builder.add_edge(lg.START, name)
    rec.invoke("invoke", builder.compile(), {"best": "", "trail": []})


@scenario(tags=["error", "reducer"])
def scenario_concurrent_plain_key_updates(lg: Any, rec: Recorder) -> None:
    """Two parallel nodes writing a plain key raise InvalidUpdateError, even if equal."""

    def write(value: str) -> Any:
        def node(state: Log) -> dict[str, Any]:
            return {"value": value}

        return node

    for label, values in [("different", ["x", "y"]), ("equal", ["same", "same"])]:
        builder = lg.StateGraph(Log)
        builder.add_node("p", write(values[0]))
        builder.add_node("q", write(values[1]))
        builder.add_edge(lg.START, "p")
        builder.add_edge(lg.START, "q")
        rec.invoke(label, builder.compile(), {"log": []})


@scenario(tags=["join", "conditional"])
def scenario_join_with_untaken_branch(lg: Any, rec: Recorder) -> None:
    """A join whose one source is never reached (a router skipped it) never fires."""
    calls: list[str] = []
    builder = lg.StateGraph(Log)
    for name in ["start", "a", "b", "joined"]:
        builder.add_node(name, _append(name, calls))
    builder.add_edge(lg.START, "start")
    builder.add_conditional_edges("start", lambda state: state["value"])
    builder.add_edge(["a", "b"], "joined")
    graph = builder.compile()
    rec.invoke("only a", graph, {"value": "a", "log": []})
    rec.invoke("both", graph, {"value": ["a", "b"], "log": []})
    rec.record("calls", sorted(calls))


@scenario(tags=["join", "cycle"])
def scenario_join_source_runs_twice(lg: Any, rec: Recorder) -> None:
    """A join source that runs twice before the other source finishes: one join run."""
    calls: list[str] = []

    def fast(state: Log) -> dict[str, Any]:
        calls.append("fast")
        return {"log": ["fast"]}

    builder = lg.StateGraph(Log)
    builder.add_node("fast", fast)
    for name in ["slow1", "slow2", "slow3", "joined"]:
        builder.add_node(name, _append(name, calls))
    builder.add_edge(lg.START, "fast")
    builder.add_edge(lg.START, "slow1")
    builder.add_edge("slow1", "slow2")
    builder.add_edge("slow2", "slow3")
    builder.add_conditional_edges(
        "fast", lambda state: "fast" if state["log"].count("fast") < 2 else lg.END
    )
    builder.add_edge(["fast", "slow3"], "joined")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": []})
    rec.record("calls", sorted(calls))
    rec.stream("stream", graph, {"log": []}, stream_mode=["updates", "values"])


@scenario(tags=["join"])
def scenario_join_and_direct_edge_same_target(lg: Any, rec: Recorder) -> None:
    """A node behind a join and a direct edge: the direct edge fires it early, the join
    fires it again when complete."""
    calls: list[str] = []
    builder = lg.StateGraph(Log)
    for name in ["a", "b", "b2", "t"]:
        builder.add_node(name, _append(name, calls))
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    builder.add_edge("b", "b2")
    builder.add_edge("a", "t")
    builder.add_edge(["a", "b2"], "t")
    rec.invoke("invoke", builder.compile(), {"log": []})
    rec.record("t runs", calls.count("t"))


@scenario(tags=["reducer", "state"])
def scenario_reducer_initial_values(lg: Any, rec: Recorder) -> None:
    """Reducer keys missing from input start from their type's empty value."""
    seen: list[Any] = []

    def record_left(left: Any, right: Any) -> Any:
        seen.append(("left", left))
        return right

    class State(TypedDict, total=False):
        total: Annotated[int, operator.add]
        words: Annotated[list[str], operator.add]
        text: Annotated[str, operator.add]
        last: Annotated[str, record_left]
        plain: str

    def first(state: State) -> dict[str, Any]:
        seen.append(("first saw", sorted(state)))
        return {"total": 2, "words": ["w"], "text": "t", "last": "x"}

    builder = lg.StateGraph(State)
    builder.add_node("first", first)
    builder.add_edge(lg.START, "first")
    rec.invoke("invoke", builder.compile(), {"plain": "p"})
    rec.record("seen", seen)
