"""Command returned by nodes: goto, update, goto=Send, goto=END, alongside static edges."""

import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, scenario


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    choice: str
    count: int


def _append(name: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"log": [name]}

    return node


@scenario(tags=["command"])
def scenario_command_goto_and_update(lg: Any, rec: Recorder) -> None:
    """Command(goto=..., update=...) writes and routes in one return value."""

    def decide(state: State) -> Any:
        return lg.Command(goto=state["choice"], update={"log": ["decide"], "count": 1})

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide, destinations=("yes", "no"))
    builder.add_node("yes", _append("yes"))
    builder.add_node("no", _append("no"))
    builder.add_edge(lg.START, "decide")
    graph = builder.compile()
    rec.invoke("yes", graph, {"choice": "yes", "log": []})
    rec.invoke("no", graph, {"choice": "no", "log": []})
    rec.stream("stream", graph, {"choice": "yes", "log": []}, stream_mode=["updates", "values"])


@scenario(tags=["command"])
def scenario_command_goto_list(lg: Any, rec: Recorder) -> None:
    """Command(goto=[...]) fans out to several nodes."""

    def decide(state: State) -> Any:
        return lg.Command(goto=["second", "first"])

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_node("first", _append("first"))
    builder.add_node("second", _append("second"))
    builder.add_edge(lg.START, "decide")
    rec.invoke("invoke", builder.compile(), {"log": []})


@scenario(tags=["command"])
def scenario_command_goto_end(lg: Any, rec: Recorder) -> None:
    """Command(goto=END) with an update ends the run after applying it."""

    def decide(state: State) -> Any:
        return lg.Command(goto=lg.END, update={"choice": "stopped"})

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_edge(lg.START, "decide")
    rec.invoke("invoke", builder.compile(), {"log": []})


@scenario(tags=["command", "send"])
def scenario_command_goto_send(lg: Any, rec: Recorder) -> None:
    """Command(goto=Send(...)) runs the target with a private argument."""

    def decide(state: State) -> Any:
        return lg.Command(
            goto=[lg.Send("echo", {"word": "hi"}), lg.Send("echo", {"word": "yo"})],
            update={"log": ["decide"]},
        )

    def echo(arg: dict[str, Any]) -> dict[str, Any]:
        return {"log": [f"echo:{arg['word']}"]}

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_node("echo", echo)
    builder.add_edge(lg.START, "decide")
    rec.invoke("invoke", builder.compile(), {"log": []})

    def single(state: State) -> Any:
        return lg.Command(goto=lg.Send("echo", {"word": "one"}))

    builder = lg.StateGraph(State)
    builder.add_node("single", single)
    builder.add_node("echo", echo)
    builder.add_edge(lg.START, "single")
    rec.invoke("single send", builder.compile(), {"log": []})


@scenario(tags=["command"])
def scenario_command_plus_static_edge(lg: Any, rec: Recorder) -> None:
    """A node returning Command(goto=b) that also has an edge to c triggers both."""

    def decide(state: State) -> Any:
        return lg.Command(goto="b", update={"log": ["decide"]})

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_node("b", _append("b"))
    builder.add_node("c", _append("c"))
    builder.add_edge(lg.START, "decide")
    builder.add_edge("decide", "c")
    rec.invoke("invoke", builder.compile(), {"log": []})


@scenario(tags=["command", "cycle"])
def scenario_command_loop(lg: Any, rec: Recorder) -> None:
    """A node looping on itself through Command until a counter is reached."""

    def step(state: State) -> Any:
        count = state.get("count", 0) + 1
        goto = lg.END if count >= 4 else "step"
        return lg.Command(goto=goto, update={"count": count, "log": [f"step{count}"]})

    builder = lg.StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(lg.START, "step")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": []})
    rec.invoke("recursion", graph, {"log": []}, {"recursion_limit": 2})


@scenario(tags=["command"])
def scenario_command_update_as_tuples(lg: Any, rec: Recorder) -> None:
    """Command(update=[(key, value), ...]) applies each pair, in order, via reducers."""

    def decide(state: State) -> Any:
        return lg.Command(update=[("log", ["x"]), ("log", ["y"]), ("count", 2)])

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_edge(lg.START, "decide")
    rec.invoke("invoke", builder.compile(), {"log": []})


@scenario(tags=["command"])
def scenario_command_without_goto(lg: Any, rec: Recorder) -> None:
    """Command with only an update follows the node's static edges."""

    def decide(state: State) -> Any:
        return lg.Command(update={"choice": "static"})

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_node("next", _append("next"))
    builder.add_edge(lg.START, "decide")
    builder.add_edge("decide", "next")
    rec.invoke("invoke", builder.compile(), {"log": []})


@scenario(tags=["command", "checkpoint"])
def scenario_command_goto_as_input(lg: Any, rec: Recorder) -> None:
    """invoke(Command(goto=node)) on a finished thread runs that node and what follows."""
    builder = lg.StateGraph(State)
    for name in ["a", "b", "c"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": []}, config)
    rec.invoke("goto b", graph, lg.Command(goto="b"), config)
    rec.invoke("goto c with update", graph, lg.Command(goto="c", update={"choice": "u"}), config)


@scenario(tags=["command", "conditional"])
def scenario_command_and_conditional_edge(lg: Any, rec: Recorder) -> None:
    """A node returning Command(goto=x) that also has a router: both targets run."""

    def decide(state: State) -> Any:
        return lg.Command(goto="by_command", update={"choice": "routed"})

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_node("by_command", _append("by_command"))
    builder.add_node("by_router", _append("by_router"))
    builder.add_edge(lg.START, "decide")
    builder.add_conditional_edges("decide", lambda state: "by_router")
    rec.invoke("invoke", builder.compile(), {"log": []})
