"""Basics: linear graphs, builder shortcuts, partial input, nodes that return nothing."""

import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, scenario


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    n: int
    note: str


def _append(name: str) -> Any:
    def node(state: Log) -> dict[str, Any]:
        return {"log": [name], "n": state.get("n", 0) + 1}

    node.__name__ = name
    return node


@scenario(tags=["linear"])
def scenario_linear(lg: Any, rec: Recorder) -> None:
    """a -> b -> c: the final state, and the values stream in order."""
    builder = lg.StateGraph(Log)
    for name in ["a", "b", "c"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    builder.add_edge("c", lg.END)
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": ["in"], "n": 0})
    rec.stream("values", graph, {"log": [], "n": 10}, stream_mode="values")


@scenario(tags=["linear", "stream"])
def scenario_linear_updates(lg: Any, rec: Recorder) -> None:
    """The updates of a linear graph, one superstep each."""
    builder = lg.StateGraph(Log)
    for name in ["a", "b"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile()
    rec.stream("updates+values", graph, {"n": 1}, stream_mode=["updates", "values"])
    rec.stream("updates only", graph, {"n": 1}, stream_mode="updates")


@scenario(tags=["none"])
def scenario_node_returns_none(lg: Any, rec: Recorder) -> None:
    """A node that returns None changes nothing; its update chunk is None."""
    calls: list[str] = []

    def quiet(state: Log) -> None:
        calls.append("quiet")

    builder = lg.StateGraph(Log)
    builder.add_node("first", _append("first"))
    builder.add_node("quiet", quiet)
    builder.add_node("last", _append("last"))
    builder.add_edge(lg.START, "first")
    builder.add_edge("first", "quiet")
    builder.add_edge("quiet", "last")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"n": 0})
    rec.stream("stream", graph, {"n": 0}, stream_mode=["updates", "values"])
    rec.record("calls", calls)


@scenario(tags=["none"])
def scenario_node_returns_empty_dict(lg: Any, rec: Recorder) -> None:
    """An empty dict is no write: no values chunk for that superstep."""

    def empty(state: Log) -> dict[str, Any]:
        return {}

    builder = lg.StateGraph(Log)
    builder.add_node("empty", empty)
    builder.add_node("after", _append("after"))
    builder.add_edge(lg.START, "empty")
    builder.add_edge("empty", "after")
    graph = builder.compile()
    rec.stream("stream", graph, {"note": "x"}, stream_mode=["updates", "values"])


@scenario(tags=["builder"])
def scenario_add_sequence(lg: Any, rec: Recorder) -> None:
    """add_sequence chains callables (named by __name__) and (name, callable) pairs."""
    builder = lg.StateGraph(Log)
    builder.add_sequence([_append("one"), ("two", _append("second")), _append("three")])
    builder.add_edge(lg.START, "one")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"n": 0})
    rec.stream("updates", graph, {"n": 0}, stream_mode=["updates", "values"])


@scenario(tags=["builder"])
def scenario_entry_and_finish_point(lg: Any, rec: Recorder) -> None:
    """set_entry_point and set_finish_point stand for edges from START and to END."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", _append("a"))
    builder.add_node("b", _append("b"))
    builder.set_entry_point("a")
    builder.add_edge("a", "b")
    builder.set_finish_point("b")
    rec.invoke("invoke", builder.compile(), {"n": 5})


@scenario(tags=["builder"])
def scenario_add_node_by_callable(lg: Any, rec: Recorder) -> None:
    """add_node(fn) names the node after the function."""

    def greet(state: Log) -> dict[str, Any]:
        return {"note": "hello"}

    builder = lg.StateGraph(Log)
    builder.add_node(greet)
    builder.add_edge(lg.START, "greet")
    graph = builder.compile()
    rec.invoke("invoke", graph, {})
    rec.stream("updates", graph, {}, stream_mode=["updates", "values"])


@scenario(tags=["state"])
def scenario_partial_input_and_overwrite(lg: Any, rec: Recorder) -> None:
    """A plain key absent from input stays absent (a reducer key starts empty); a plain
    key keeps the last write."""

    def first(state: Log) -> dict[str, Any]:
        return {"note": "first"}

    def second(state: Log) -> dict[str, Any]:
        return {"note": state["note"] + "+second"}

    builder = lg.StateGraph(Log)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(lg.START, "first")
    builder.add_edge("first", "second")
    graph = builder.compile()
    rec.invoke("no n", graph, {"note": "input"})
    rec.invoke("empty input", graph, {})


@scenario(tags=["state"])
def scenario_node_sees_state_snapshot(lg: Any, rec: Recorder) -> None:
    """Each node reads the state as of the end of the previous superstep."""
    seen: list[Any] = []

    def look(name: str) -> Any:
        def node(state: Log) -> dict[str, Any]:
            seen.append((name, list(state.get("log", [])), state.get("n")))
            return {"log": [name]}

        return node

    builder = lg.StateGraph(Log)
    builder.add_node("a", look("a"))
    builder.add_node("b", look("b"))
    builder.add_node("c", look("c"))
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    builder.add_edge("a", "c")
    rec.invoke("invoke", builder.compile(), {"n": 3})
    rec.record("seen", sorted(seen))


@scenario(tags=["builder"])
def scenario_compiled_graph_name(lg: Any, rec: Recorder) -> None:
    """compile(name=...) names the graph; the default name is LangGraph."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", _append("a"))
    builder.add_edge(lg.START, "a")
    rec.record("default", builder.compile().name)
    rec.record("named", builder.compile(name="my_graph").name)


@scenario(tags=["config"])
def scenario_node_reads_config(lg: Any, rec: Recorder) -> None:
    """A node taking (state, config) sees the configurable values passed to invoke."""

    def node(state: Log, config) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        # Unannotated: LangGraph warns unless config is typed as its RunnableConfig.
        return {"note": config["configurable"]["user"]}

    builder = lg.StateGraph(Log)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    rec.invoke("invoke", builder.compile(), {}, {"configurable": {"user": "ada"}})


@scenario(tags=["state"])
def scenario_input_with_unknown_keys(lg: Any, rec: Recorder) -> None:
    """Input keys the state does not declare are ignored."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", _append("a"))
    builder.add_edge(lg.START, "a")
    rec.invoke("invoke", builder.compile(), {"n": 1, "bogus": "ignored"})


@scenario(tags=["stream"])
def scenario_invoke_with_stream_mode(lg: Any, rec: Recorder) -> None:
    """invoke(stream_mode="values") returns the final state; another mode returns its chunks."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", _append("a"))
    builder.add_node("b", _append("b"))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile()
    rec.invoke("values", graph, {"n": 0}, stream_mode="values")
    rec.invoke("updates", graph, {"n": 0}, stream_mode="updates")
