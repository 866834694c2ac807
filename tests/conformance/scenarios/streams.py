"""Stream modes: values, updates, custom (get_stream_writer), messages, debug, mode lists."""

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, scenario


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    n: int


def _fan(lg: Any, writer_nodes: bool = False) -> Any:
    """START -> a -> (b, c) -> d, optionally writing custom chunks."""

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            if writer_nodes:
                write = lg.get_stream_writer()
                write({"node": name, "phase": "start"})
                write({"node": name, "phase": "end"})
            return {"log": [name]}

        return run

    builder = lg.StateGraph(State)
    for name in ["a", "b", "c", "d"]:
        builder.add_node(name, node(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge(["b", "c"], "d")
    return builder.compile()


@scenario(tags=["stream"])
def scenario_stream_values(lg: Any, rec: Recorder) -> None:
    """values: the input state, then the state after every superstep."""
    rec.stream("values", _fan(lg), {"log": ["in"]}, stream_mode="values")


@scenario(tags=["stream"])
def scenario_stream_updates_parallel(lg: Any, rec: Recorder) -> None:
    """updates per superstep as a multiset; updates alone as one multiset."""
    graph = _fan(lg)
    rec.stream("grouped", graph, {"log": []}, stream_mode=["updates", "values"])
    rec.stream("alone", graph, {"log": []}, stream_mode="updates")


@scenario(tags=["stream", "custom"])
def scenario_stream_custom(lg: Any, rec: Recorder) -> None:
    """custom: get_stream_writer() chunks, in order within each node."""
    rec.stream("custom", _fan(lg, writer_nodes=True), {"log": []}, stream_mode="custom")


@scenario(tags=["stream", "custom"])
def scenario_stream_mode_list(lg: Any, rec: Recorder) -> None:
    """A list of modes yields (mode, chunk) pairs; each mode follows its own rules."""
    rec.stream(
        "three modes",
        _fan(lg, writer_nodes=True),
        {"log": []},
        stream_mode=["values", "updates", "custom"],
    )


@scenario(tags=["stream", "custom"])
def scenario_stream_writer_outside_custom(lg: Any, rec: Recorder) -> None:
    """Custom chunks are dropped when custom mode is not streamed."""
    graph = _fan(lg, writer_nodes=True)
    rec.stream("values only", graph, {"log": []}, stream_mode="values")
    rec.invoke("invoke", graph, {"log": []})


@scenario(tags=["stream", "custom"])
def scenario_stream_writer_param(lg: Any, rec: Recorder) -> None:
    """A custom chunk of any shape (string) is streamed in order in a linear graph."""

    def talk(state: State) -> dict[str, Any]:
        write = lg.get_stream_writer()
        for word in ["one", "two", "three"]:
            write(word)
        return {"n": 3}

    builder = lg.StateGraph(State)
    builder.add_node("talk", talk)
    builder.add_edge(lg.START, "talk")
    rec.stream("custom", builder.compile(), {"n": 0}, stream_mode=["custom", "values"])


@scenario(tags=["stream", "debug"])
def scenario_stream_debug(lg: Any, rec: Recorder) -> None:
    """debug: per step, the task and task_result events (and checkpoints with a saver)."""
    rec.stream("no saver", _fan(lg), {"log": []}, stream_mode="debug")


@scenario(tags=["stream", "debug", "checkpoint"])
def scenario_stream_debug_with_saver(lg: Any, rec: Recorder) -> None:
    """debug with a checkpointer adds one checkpoint event per step."""

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            return {"log": [name]}

        return run

    builder = lg.StateGraph(State)
    builder.add_node("a", node("a"))
    builder.add_node("b", node("b"))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    rec.stream(
        "debug", graph, {"log": []}, {"configurable": {"thread_id": "t"}}, stream_mode="debug"
    )


@scenario(tags=["stream", "messages"])
def scenario_stream_messages_mode(lg: Any, rec: Recorder) -> None:
    """messages: messages returned by nodes, each with the node that produced it."""

    def bot(state: Any) -> dict[str, Any]:
        return {"messages": [lg.AIMessage(content="hi there", id="a1")]}

    def echo(state: Any) -> dict[str, Any]:
        return {"messages": [lg.AIMessage(content="echo", id="a2")]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("bot", bot)
    builder.add_node("echo", echo)
    builder.add_edge(lg.START, "bot")
    builder.add_edge("bot", "echo")
    rec.stream(
        "messages",
        builder.compile(),
        {"messages": [lg.HumanMessage(content="hello", id="h1")]},
        stream_mode="messages",
    )


@scenario(tags=["stream", "async"])
async def scenario_astream_values_and_updates(lg: Any, rec: Recorder) -> None:
    """astream with async nodes: the same chunks as stream."""

    def node(name: str) -> Any:
        async def run(state: State) -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"log": [name]}

        return run

    builder = lg.StateGraph(State)
    for name in ["a", "b", "c"]:
        builder.add_node(name, node(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    graph = builder.compile()
    await rec.astream("astream", graph, {"log": []}, stream_mode=["updates", "values"])


@scenario(tags=["stream", "async", "custom"])
async def scenario_astream_custom_async_nodes(lg: Any, rec: Recorder) -> None:
    """Async nodes writing custom chunks through get_stream_writer()."""

    def node(name: str) -> Any:
        async def run(state: State) -> dict[str, Any]:
            write = lg.get_stream_writer()
            for n in range(3):
                write({"node": name, "n": n})
                await asyncio.sleep(0)
            return {"log": [name]}

        return run

    builder = lg.StateGraph(State)
    for name in ["p", "q"]:
        builder.add_node(name, node(name))
        builder.add_edge(lg.START, name)
    await rec.astream("custom", builder.compile(), {"log": []}, stream_mode="custom")


@scenario(tags=["stream", "none"])
def scenario_stream_values_skip_empty_steps(lg: Any, rec: Recorder) -> None:
    """A superstep that writes nothing emits no values chunk."""

    def noop(state: State) -> None:
        return None

    def count(state: State) -> dict[str, Any]:
        return {"n": 1}

    builder = lg.StateGraph(State)
    builder.add_node("noop", noop)
    builder.add_node("count", count)
    builder.add_edge(lg.START, "noop")
    builder.add_edge("noop", "count")
    rec.stream("values", builder.compile(), {"log": []}, stream_mode=["values", "updates"])


@scenario(tags=["stream", "tasks"])
def scenario_stream_tasks_mode(lg: Any, rec: Recorder) -> None:
    """tasks: a start and a result event per task, as a multiset."""
    rec.stream("tasks", _fan(lg), {"log": []}, stream_mode="tasks")


@scenario(tags=["stream", "checkpoints"])
def scenario_stream_checkpoints_mode(lg: Any, rec: Recorder) -> None:
    """checkpoints: one event per saved checkpoint, with values, next, source and step."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_node("b", lambda state: {"log": ["b"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    rec.stream(
        "checkpoints",
        graph,
        {"log": []},
        {"configurable": {"thread_id": "t"}},
        stream_mode="checkpoints",
    )


@scenario(tags=["stream", "subgraph"])
def scenario_stream_nested_subgraphs(lg: Any, rec: Recorder) -> None:
    """Two levels of subgraphs streamed with subgraphs=True: nested namespaces."""

    def leaf(state: State) -> dict[str, Any]:
        return {"log": ["leaf"]}

    inner_builder = lg.StateGraph(State)
    inner_builder.add_node("leaf", leaf)
    inner_builder.add_edge(lg.START, "leaf")

    middle_builder = lg.StateGraph(State)
    middle_builder.add_node("inner", inner_builder.compile())
    middle_builder.add_edge(lg.START, "inner")

    builder = lg.StateGraph(State)
    builder.add_node("middle", middle_builder.compile())
    builder.add_edge(lg.START, "middle")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"log": ["in"]})
    rec.stream("updates", graph, {"log": []}, stream_mode="updates", subgraphs=True)


@scenario(tags=["stream", "send"])
def scenario_stream_updates_send_and_command(lg: Any, rec: Recorder) -> None:
    """updates of a Command node and the Send tasks it starts, per superstep."""

    def plan(state: State) -> Any:
        return lg.Command(
            update={"n": 2}, goto=[lg.Send("work", {"k": k}) for k in range(state["n"] + 1)]
        )

    def work(arg: dict[str, Any]) -> dict[str, Any]:
        return {"log": [f"work {arg['k']}"]}

    builder = lg.StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("work", work)
    builder.add_edge(lg.START, "plan")
    rec.stream("stream", builder.compile(), {"n": 2}, stream_mode=["updates", "values"])


@scenario(tags=["stream", "messages", "subgraph"])
def scenario_stream_messages_from_subgraph(lg: Any, rec: Recorder) -> None:
    """messages mode with subgraphs=True: the child's messages carry its namespace."""

    def child_bot(state: Any) -> dict[str, Any]:
        return {"messages": [lg.AIMessage(content="from child", id="c1")]}

    child_builder = lg.StateGraph(lg.MessagesState)
    child_builder.add_node("child_bot", child_bot)
    child_builder.add_edge(lg.START, "child_bot")

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("child", child_builder.compile())
    builder.add_edge(lg.START, "child")
    graph = builder.compile()
    start = {"messages": [lg.HumanMessage(content="hi", id="h")]}
    rec.stream("flat", graph, start, stream_mode="messages")
    rec.stream("namespaced", graph, start, stream_mode="messages", subgraphs=True)
