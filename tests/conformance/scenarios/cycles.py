"""Cycles and the recursion limit: how many supersteps run before GraphRecursionError."""

import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, scenario


class Counter(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]


def _loop_graph(lg: Any, stop_at: int | None, calls: list[int], checkpointer: Any = None) -> Any:
    """One node incrementing n, looping back to itself until n reaches stop_at."""

    def tick(state: Counter) -> dict[str, Any]:
        calls.append(state["n"])
        return {"n": state["n"] + 1}

    def again(state: Counter) -> str:
        if stop_at is not None and state["n"] >= stop_at:
            return lg.END
        return "tick"

    builder = lg.StateGraph(Counter)
    builder.add_node("tick", tick)
    builder.add_edge(lg.START, "tick")
    builder.add_conditional_edges("tick", again)
    return builder.compile(checkpointer=checkpointer)


@scenario(tags=["cycle"])
def scenario_counter_loop(lg: Any, rec: Recorder) -> None:
    """A self-loop with a counter runs until its condition sends it to END."""
    calls: list[int] = []
    graph = _loop_graph(lg, 5, calls)
    rec.invoke("invoke", graph, {"n": 0})
    rec.record("calls", calls)
    rec.stream("values", graph, {"n": 2}, stream_mode="values")


@scenario(tags=["cycle"])
def scenario_two_node_cycle(lg: Any, rec: Recorder) -> None:
    """ping and pong alternate until the log is long enough."""

    def ping(state: Counter) -> dict[str, Any]:
        return {"log": ["ping"]}

    def pong(state: Counter) -> dict[str, Any]:
        return {"log": ["pong"]}

    builder = lg.StateGraph(Counter)
    builder.add_node("ping", ping)
    builder.add_node("pong", pong)
    builder.add_edge(lg.START, "ping")
    builder.add_edge("ping", "pong")
    builder.add_conditional_edges(
        "pong", lambda state: lg.END if len(state["log"]) >= 6 else "ping"
    )
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": []})
    rec.stream("updates", graph, {"log": []}, stream_mode=["updates", "values"])


@scenario(tags=["recursion"])
def scenario_recursion_limit_hit(lg: Any, rec: Recorder) -> None:
    """An endless loop ends with GraphRecursionError after recursion_limit supersteps."""
    calls: list[int] = []
    graph = _loop_graph(lg, None, calls)
    rec.invoke("limit 5", graph, {"n": 0}, {"recursion_limit": 5})
    rec.record("calls at limit 5", len(calls))


@scenario(tags=["recursion"])
def scenario_recursion_limit_step_count(lg: Any, rec: Recorder) -> None:
    """The exact number of node runs before the error, for several limits."""
    for limit in [1, 2, 3, 7, 12]:
        calls: list[int] = []
        graph = _loop_graph(lg, None, calls)
        rec.invoke(f"limit {limit}", graph, {"n": 0}, {"recursion_limit": limit})
        rec.record(f"calls at limit {limit}", len(calls))


@scenario(tags=["recursion"])
def scenario_recursion_limit_boundary(lg: Any, rec: Recorder) -> None:
    """A loop of k supersteps against limits around k: which ones finish."""
    for stop_at, limit in [(4, 3), (4, 4), (4, 5), (6, 6), (6, 7)]:
        calls: list[int] = []
        graph = _loop_graph(lg, stop_at, calls)
        label = f"{stop_at} steps, limit {limit}"
        rec.invoke(label, graph, {"n": 0}, {"recursion_limit": limit})
        rec.record(f"{label} calls", len(calls))


@scenario(tags=["recursion"])
def scenario_default_limit_allows_long_loops(lg: Any, rec: Recorder) -> None:
    """Without a recursion_limit, a 60-superstep loop finishes (the default is large)."""
    calls: list[int] = []
    graph = _loop_graph(lg, 60, calls)
    rec.invoke("invoke", graph, {"n": 0})


@scenario(tags=["recursion", "stream"])
def scenario_recursion_limit_while_streaming(lg: Any, rec: Recorder) -> None:
    """Streaming yields the supersteps that ran, then raises GraphRecursionError."""
    calls: list[int] = []
    graph = _loop_graph(lg, None, calls)
    rec.stream("stream", graph, {"n": 0}, {"recursion_limit": 3}, stream_mode="values")


@scenario(tags=["recursion", "checkpoint"])
def scenario_recursion_limit_state_after(lg: Any, rec: Recorder) -> None:
    """After GraphRecursionError the thread's state holds the last finished superstep."""
    calls: list[int] = []
    graph = _loop_graph(lg, None, calls, lg.InMemorySaver())
    config = {"configurable": {"thread_id": "loop"}, "recursion_limit": 4}
    rec.invoke("invoke", graph, {"n": 0}, config)
    rec.state("state", graph, config)


@scenario(tags=["recursion", "fanout"])
def scenario_recursion_limit_counts_supersteps(lg: Any, rec: Recorder) -> None:
    """Parallel nodes share a superstep: the limit counts supersteps, not node runs."""
    calls: list[str] = []

    def branch(name: str) -> Any:
        def node(state: Counter) -> dict[str, Any]:
            calls.append(name)
            return {"log": [name]}

        return node

    builder = lg.StateGraph(Counter)
    for name in ["a", "b", "c"]:
        builder.add_node(name, branch(name))
        builder.add_edge(lg.START, name)
    builder.add_node("d", branch("d"))
    builder.add_edge(["a", "b", "c"], "d")
    builder.add_node("e", branch("e"))
    builder.add_edge("d", "e")
    graph = builder.compile()
    for limit in [2, 3, 4, 5]:
        calls.clear()
        rec.invoke(f"limit {limit}", graph, {"log": []}, {"recursion_limit": limit})
        rec.record(f"node runs at limit {limit}", len(calls))


@scenario(tags=["recursion", "interrupt"])
def scenario_recursion_limit_per_invocation(lg: Any, rec: Recorder) -> None:
    """Each resume gets a fresh recursion budget: a long loop paused often never hits it."""

    def ask(state: Counter) -> dict[str, Any]:
        reply = lg.interrupt(state["n"]) if state["n"] % 2 == 0 else "skip"
        return {"n": state["n"] + 1, "log": [str(reply)]}

    builder = lg.StateGraph(Counter)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    builder.add_conditional_edges("ask", lambda state: lg.END if state["n"] >= 8 else "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 3}
    rec.invoke("start", graph, {"n": 0, "log": []}, config)
    for answer in ["a", "b", "c", "d"]:
        rec.invoke(f"resume {answer}", graph, lg.Command(resume=answer), config)
