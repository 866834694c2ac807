"""Compiled graphs as nodes: shared keys, private keys, reducers re-applied, Command.PARENT."""

import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, scenario


class Parent(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    topic: str
    result: str


class Child(TypedDict, total=False):
    topic: str
    result: str
    scratch: str


def _child(lg: Any, checkpointer: Any = None) -> Any:
    def draft(state: Child) -> dict[str, Any]:
        return {"scratch": f"draft on {state['topic']}"}

    def finish(state: Child) -> dict[str, Any]:
        return {"result": state["scratch"].upper()}

    builder = lg.StateGraph(Child)
    builder.add_node("draft", draft)
    builder.add_node("finish", finish)
    builder.add_edge(lg.START, "draft")
    builder.add_edge("draft", "finish")
    return builder.compile(checkpointer=checkpointer)


def _append(name: str) -> Any:
    def node(state: Parent) -> dict[str, Any]:
        return {"log": [name]}

    return node


@scenario(tags=["subgraph"])
def scenario_subgraph_shared_keys(lg: Any, rec: Recorder) -> None:
    """A compiled subgraph as a node reads and writes the keys it shares with the parent."""
    builder = lg.StateGraph(Parent)
    builder.add_node("intro", _append("intro"))
    builder.add_node("child", _child(lg))
    builder.add_node("outro", _append("outro"))
    builder.add_edge(lg.START, "intro")
    builder.add_edge("intro", "child")
    builder.add_edge("child", "outro")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"topic": "owls", "log": []})
    rec.stream("updates", graph, {"topic": "owls", "log": []}, stream_mode=["updates", "values"])


@scenario(tags=["subgraph", "stream"])
def scenario_subgraph_stream_namespaces(lg: Any, rec: Recorder) -> None:
    """stream(subgraphs=True) tags the child's chunks with the parent node's name."""
    builder = lg.StateGraph(Parent)
    builder.add_node("child", _child(lg))
    builder.add_edge(lg.START, "child")
    graph = builder.compile()
    rec.stream(
        "updates", graph, {"topic": "bats"}, stream_mode=["updates", "values"], subgraphs=True
    )


@scenario(tags=["subgraph", "reducer"])
def scenario_subgraph_output_reapplied(lg: Any, rec: Recorder) -> None:
    """The child's full final state goes through the parent's reducers: lists add up."""

    def child_step(state: Parent) -> dict[str, Any]:
        return {"log": ["child"]}

    child_builder = lg.StateGraph(Parent)
    child_builder.add_node("child_step", child_step)
    child_builder.add_edge(lg.START, "child_step")
    child = child_builder.compile()

    builder = lg.StateGraph(Parent)
    builder.add_node("first", _append("first"))
    builder.add_node("child", child)
    builder.add_edge(lg.START, "first")
    builder.add_edge("first", "child")
    rec.invoke("invoke", builder.compile(), {"log": ["input"]})


@scenario(tags=["subgraph"])
def scenario_subgraph_called_in_node(lg: Any, rec: Recorder) -> None:
    """A node that invokes a compiled graph itself and maps the result back."""
    child = _child(lg)

    def call_child(state: Parent) -> dict[str, Any]:
        out = child.invoke({"topic": state["topic"] + "!"})
        return {"result": out["result"], "log": [f"child keys {sorted(out)}"]}

    builder = lg.StateGraph(Parent)
    builder.add_node("call_child", call_child)
    builder.add_edge(lg.START, "call_child")
    rec.invoke("invoke", builder.compile(), {"topic": "cats", "log": []})


@scenario(tags=["subgraph", "command"])
def scenario_subgraph_command_parent(lg: Any, rec: Recorder) -> None:
    """Command(graph=Command.PARENT, goto=...) leaves the child and routes the parent."""

    def escalate(state: Parent) -> Any:
        return lg.Command(graph=lg.Command.PARENT, goto="handler", update={"topic": "escalated"})

    child_builder = lg.StateGraph(Parent)
    child_builder.add_node("escalate", escalate)
    child_builder.add_edge(lg.START, "escalate")
    child = child_builder.compile()

    builder = lg.StateGraph(Parent)
    builder.add_node("child", child, destinations=("handler",))
    builder.add_node("handler", _append("handler"))
    builder.add_edge(lg.START, "child")
    rec.invoke("invoke", builder.compile(), {"topic": "start", "log": []})


@scenario(tags=["subgraph", "interrupt"])
def scenario_subgraph_interrupt(lg: Any, rec: Recorder) -> None:
    """An interrupt inside a subgraph surfaces from the parent and resumes through it."""
    child_runs: list[str] = []

    def ask(state: Child) -> dict[str, Any]:
        child_runs.append("ask")
        return {"result": lg.interrupt(f"about {state['topic']}?")}

    child_builder = lg.StateGraph(Child)
    child_builder.add_node("ask", ask)
    child_builder.add_edge(lg.START, "ask")
    child = child_builder.compile()

    builder = lg.StateGraph(Parent)
    builder.add_node("intro", _append("intro"))
    builder.add_node("child", child)
    builder.add_edge(lg.START, "intro")
    builder.add_edge("intro", "child")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    rec.invoke("first", graph, {"topic": "owls", "log": []}, config)
    rec.state("paused", graph, config)
    rec.invoke("resumed", graph, lg.Command(resume="hoot"), config)
    rec.record("child runs", len(child_runs))


@scenario(tags=["subgraph"])
def scenario_subgraph_in_parallel(lg: Any, rec: Recorder) -> None:
    """Two different subgraphs in one superstep writing different keys."""

    def make_child(key: str, value: str) -> Any:
        def write(state: Parent) -> dict[str, Any]:
            return {key: value}

        child_builder = lg.StateGraph(Parent)
        child_builder.add_node("write", write)
        child_builder.add_edge(lg.START, "write")
        return child_builder.compile()

    builder = lg.StateGraph(Parent)
    builder.add_node("topic_child", make_child("topic", "from child one"))
    builder.add_node("result_child", make_child("result", "from child two"))
    builder.add_edge(lg.START, "topic_child")
    builder.add_edge(lg.START, "result_child")
    graph = builder.compile()
    rec.invoke("disjoint keys", graph, {})
    # Both children now return the topic they were given: two writes to a plain key.
    rec.invoke("shared input key", graph, {"topic": "given"})


@scenario(tags=["subgraph", "error"])
def scenario_subgraph_error_propagates(lg: Any, rec: Recorder) -> None:
    """An exception in a child node leaves the parent's invoke with its own type."""

    def broken(state: Child) -> dict[str, Any]:
        raise LookupError("child broke")

    child_builder = lg.StateGraph(Child)
    child_builder.add_node("broken", broken)
    child_builder.add_edge(lg.START, "broken")

    builder = lg.StateGraph(Parent)
    builder.add_node("child", child_builder.compile())
    builder.add_edge(lg.START, "child")
    rec.invoke("invoke", builder.compile(), {"topic": "x"})


@scenario(tags=["subgraph", "stream", "custom"])
def scenario_subgraph_custom_stream(lg: Any, rec: Recorder) -> None:
    """get_stream_writer() inside a child: custom chunks carry the child's namespace."""

    def talk(state: Child) -> dict[str, Any]:
        lg.get_stream_writer()({"node": "talk", "said": state["topic"]})
        return {"result": "talked"}

    child_builder = lg.StateGraph(Child)
    child_builder.add_node("talk", talk)
    child_builder.add_edge(lg.START, "talk")

    builder = lg.StateGraph(Parent)
    builder.add_node("child", child_builder.compile())
    builder.add_edge(lg.START, "child")
    graph = builder.compile()
    rec.stream("flat", graph, {"topic": "hi"}, stream_mode="custom")
    rec.stream("namespaced", graph, {"topic": "hi"}, stream_mode="custom", subgraphs=True)


@scenario(tags=["subgraph", "interrupt", "checkpoint"])
def scenario_subgraph_state_while_paused(lg: Any, rec: Recorder) -> None:
    """get_state(subgraphs=True) while a child is paused shows the child's own snapshot."""

    def draft(state: Child) -> dict[str, Any]:
        return {"scratch": "drafted"}

    def ask(state: Child) -> dict[str, Any]:
        return {"result": lg.interrupt("ok?")}

    child_builder = lg.StateGraph(Child)
    child_builder.add_node("draft", draft)
    child_builder.add_node("ask", ask)
    child_builder.add_edge(lg.START, "draft")
    child_builder.add_edge("draft", "ask")

    builder = lg.StateGraph(Parent)
    builder.add_node("child", child_builder.compile())
    builder.add_edge(lg.START, "child")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"topic": "x"}, config)
    snapshot = graph.get_state(config, subgraphs=True)
    rec.record("parent next", snapshot.next)
    child_state = snapshot.tasks[0].state
    rec.record("child values", child_state.values)
    rec.record("child next", child_state.next)
