"""Conditional edges: single targets, lists, path maps (dict and list), END."""

import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, scenario


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    route: Any


def _append(name: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"log": [name]}

    return node


def _graph(lg: Any, router: Any, path_map: Any = None, targets: tuple[str, ...] = ()) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("decide", _append("decide"))
    for name in targets or ("left", "right", "middle"):
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "decide")
    if path_map is None:
        builder.add_conditional_edges("decide", router)
    else:
        builder.add_conditional_edges("decide", router, path_map)
    return builder.compile()


@scenario(tags=["conditional"])
def scenario_conditional_single_target(lg: Any, rec: Recorder) -> None:
    """The router's return value names the next node."""
    graph = _graph(lg, lambda state: state["route"])
    rec.invoke("left", graph, {"route": "left"})
    rec.invoke("right", graph, {"route": "right"})


@scenario(tags=["conditional"])
def scenario_conditional_returns_list(lg: Any, rec: Recorder) -> None:
    """A list return fans out to every named node in one superstep."""
    graph = _graph(lg, lambda state: state["route"])
    rec.invoke("two", graph, {"route": ["right", "left"]})
    rec.invoke("three", graph, {"route": ["middle", "left", "right"]})
    rec.stream("stream", graph, {"route": ["right", "left"]}, stream_mode=["updates", "values"])


@scenario(tags=["conditional"])
def scenario_conditional_empty_list(lg: Any, rec: Recorder) -> None:
    """An empty list from the router schedules nothing: the run ends."""
    graph = _graph(lg, lambda state: [])
    rec.invoke("invoke", graph, {"log": []})


@scenario(tags=["conditional", "path_map"])
def scenario_path_map_dict_with_end(lg: Any, rec: Recorder) -> None:
    """A path map translates labels to nodes, and a label may lead to END."""
    path_map = {"go_left": "left", "go_right": "right", "stop": lg.END}
    graph = _graph(lg, lambda state: state["route"], path_map)
    rec.invoke("go_left", graph, {"route": "go_left"})
    rec.invoke("stop", graph, {"route": "stop"})
    rec.invoke("list", graph, {"route": ["go_right", "go_left"]})


@scenario(tags=["conditional", "path_map"])
def scenario_path_map_list(lg: Any, rec: Recorder) -> None:
    """A list path map names the allowed targets; the router returns node names."""
    graph = _graph(lg, lambda state: state["route"], ["left", "right", lg.END])
    rec.invoke("right", graph, {"route": "right"})
    rec.invoke("end", graph, {"route": lg.END})


@scenario(tags=["conditional"])
def scenario_conditional_returns_end(lg: Any, rec: Recorder) -> None:
    """A router returning END without a path map ends the run."""
    graph = _graph(lg, lambda state: lg.END)
    rec.invoke("invoke", graph, {"log": []})
    rec.stream("stream", graph, {"log": []}, stream_mode=["updates", "values"])


@scenario(tags=["conditional"])
def scenario_conditional_from_start(lg: Any, rec: Recorder) -> None:
    """Conditional edges from START route the input itself."""
    builder = lg.StateGraph(State)
    builder.add_node("small", _append("small"))
    builder.add_node("big", _append("big"))
    builder.add_conditional_edges(lg.START, lambda state: "big" if state["route"] > 10 else "small")
    graph = builder.compile()
    rec.invoke("5", graph, {"route": 5})
    rec.invoke("50", graph, {"route": 50})


@scenario(tags=["conditional"])
def scenario_conditional_and_static_edge(lg: Any, rec: Recorder) -> None:
    """A node with a static edge and a conditional edge triggers both targets."""
    builder = lg.StateGraph(State)
    for name in ["decide", "always", "sometimes", "never"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "decide")
    builder.add_edge("decide", "always")
    builder.add_conditional_edges(
        "decide", lambda state: "sometimes" if state["route"] else "never"
    )
    graph = builder.compile()
    rec.invoke("true", graph, {"route": True, "log": []})
    rec.invoke("false", graph, {"route": False, "log": []})


@scenario(tags=["conditional"])
def scenario_router_reads_updated_state(lg: Any, rec: Recorder) -> None:
    """The router sees the state after the source node's own write."""

    def decide(state: State) -> dict[str, Any]:
        return {"route": "right"}

    builder = lg.StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_node("left", _append("left"))
    builder.add_node("right", _append("right"))
    builder.add_edge(lg.START, "decide")
    builder.add_conditional_edges("decide", lambda state: state["route"])
    rec.invoke("invoke", builder.compile(), {"route": "left"})


@scenario(tags=["conditional"])
def scenario_two_routers_same_node(lg: Any, rec: Recorder) -> None:
    """Two conditional edges from one node: both routers run and their targets merge."""

    def first_router(state: State) -> str:
        return "left"

    def second_router(state: State) -> list[str]:
        return ["right", "left"]

    builder = lg.StateGraph(State)
    for name in ["decide", "left", "right", "middle"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "decide")
    builder.add_conditional_edges("decide", first_router)
    builder.add_conditional_edges("decide", second_router)
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": []})
