"""Errors: which exception type each mistake raises, at build, compile and run time."""

from typing import Any, TypedDict

from ..harness import Recorder, scenario


class State(TypedDict, total=False):
    value: str
    other: str


def _set(value: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"value": value}

    return node


@scenario(tags=["error", "build"])
def scenario_build_errors(lg: Any, rec: Recorder) -> None:
    """Duplicate nodes and reserved names are refused when they are added."""
    builder = lg.StateGraph(State)
    builder.add_node("a", _set("a"))
    rec.raises("duplicate node", builder.add_node, "a", _set("again"))
    rec.raises("reserved START", lg.StateGraph(State).add_node, lg.START, _set("x"))
    rec.raises("reserved END", lg.StateGraph(State).add_node, lg.END, _set("x"))
    rec.raises("edge from END", builder.add_edge, lg.END, "a")
    rec.raises("edge to START", builder.add_edge, "a", lg.START)


@scenario(tags=["error", "compile"])
def scenario_compile_errors(lg: Any, rec: Recorder) -> None:
    """compile() refuses unknown edge targets and graphs without an entry point."""
    builder = lg.StateGraph(State)
    builder.add_node("a", _set("a"))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "ghost")
    rec.raises("unknown target", builder.compile)

    builder = lg.StateGraph(State)
    builder.add_node("a", _set("a"))
    rec.raises("no entry point", builder.compile)

    builder = lg.StateGraph(State)
    builder.add_node("a", _set("a"))
    builder.add_edge(lg.START, "a")
    builder.add_edge("ghost", "a")
    rec.raises("unknown source", builder.compile)

    builder = lg.StateGraph(State)
    builder.add_node("a", _set("a"))
    builder.add_edge(lg.START, "a")
    rec.raises("interrupt_before unknown node", builder.compile, interrupt_before=["ghost"])


@scenario(tags=["error", "run"])
def scenario_node_exception_propagates(lg: Any, rec: Recorder) -> None:
    """An exception raised by a node leaves invoke with its own type."""

    def broken(state: State) -> dict[str, Any]:
        raise ZeroDivisionError("broken node")

    builder = lg.StateGraph(State)
    builder.add_node("broken", broken)
    builder.add_edge(lg.START, "broken")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"value": "x"})
    rec.stream("stream", graph, {"value": "x"}, stream_mode=["updates", "values"])


def _returns(value: Any) -> Any:
    def bad(state: State) -> Any:
        return value

    return bad


@scenario(tags=["error", "run"])
def scenario_node_returns_non_dict(lg: Any, rec: Recorder) -> None:
    """A node returning something other than a dict, None or Command: InvalidUpdateError."""
    for label, value in [("int", 5), ("string", "text"), ("list", ["value"])]:
        builder = lg.StateGraph(State)
        builder.add_node("bad", _returns(value))
        builder.add_edge(lg.START, "bad")
        rec.invoke(label, builder.compile(), {"value": "v"})


@scenario(tags=["error", "run"])
def scenario_node_writes_unknown_key(lg: Any, rec: Recorder) -> None:
    """A write to a key no schema declares is dropped without an error."""

    def stray(state: State) -> dict[str, Any]:
        return {"not_a_key": 1, "other": "kept"}

    builder = lg.StateGraph(State)
    builder.add_node("stray", stray)
    builder.add_edge(lg.START, "stray")
    rec.invoke("invoke", builder.compile(), {"value": "v"})


@scenario(tags=["error", "run"])
def scenario_empty_input(lg: Any, rec: Recorder) -> None:
    """invoke(None) on a fresh thread has nothing to run: EmptyInputError."""
    builder = lg.StateGraph(State)
    builder.add_node("a", _set("a"))
    builder.add_edge(lg.START, "a")
    rec.invoke("no checkpointer", builder.compile(), None)
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    rec.invoke("fresh thread", graph, None, {"configurable": {"thread_id": "t"}})


@scenario(tags=["error", "types"])
def scenario_error_type_relations(lg: Any, rec: Recorder) -> None:
    """GraphRecursionError is a RecursionError; the others are plain Exceptions."""
    rec.record(
        "GraphRecursionError is RecursionError",
        issubclass(lg.GraphRecursionError, RecursionError),
    )
    rec.record("InvalidUpdateError is Exception", issubclass(lg.InvalidUpdateError, Exception))
    rec.record("GraphInterrupt is Exception", issubclass(lg.GraphInterrupt, Exception))


@scenario(tags=["error", "command"])
def scenario_command_goto_unknown_node(lg: Any, rec: Recorder) -> None:
    """Command(goto=...) naming a node that does not exist is dropped (LangGraph logs it)."""

    def lost(state: State) -> Any:
        return lg.Command(goto="nowhere")

    builder = lg.StateGraph(State)
    builder.add_node("lost", lost)
    builder.add_edge(lg.START, "lost")
    rec.invoke("invoke", builder.compile(), {"value": "v"})


@scenario(tags=["error", "conditional"])
def scenario_router_returns_unknown_node(lg: Any, rec: Recorder) -> None:
    """A router naming an unknown node is dropped (logged); a path map miss raises KeyError."""
    builder = lg.StateGraph(State)
    builder.add_node("a", _set("a"))
    builder.add_edge(lg.START, "a")
    builder.add_conditional_edges("a", lambda state: "ghost")
    rec.invoke("no path map", builder.compile(), {"value": "v"})

    builder = lg.StateGraph(State)
    builder.add_node("a", _set("a"))
    builder.add_node("b", _set("b"))
    builder.add_edge(lg.START, "a")
    builder.add_conditional_edges("a", lambda state: "unmapped", {"go": "b"})
    rec.invoke("path map miss", builder.compile(), {"value": "v"})
