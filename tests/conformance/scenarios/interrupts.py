"""interrupt() and resume: single, several per node, several nodes, breakpoints at compile."""

import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, scenario


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    answer: str


def _thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def _append(name: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"log": [name]}

    return node


@scenario(tags=["interrupt"])
def scenario_interrupt_single(lg: Any, rec: Recorder) -> None:
    """invoke returns __interrupt__; Command(resume=...) is interrupt()'s return value."""

    def ask(state: State) -> dict[str, Any]:
        answer = lg.interrupt({"question": "name?"})
        return {"answer": answer}

    builder = lg.StateGraph(State)
    builder.add_node("before", _append("before"))
    builder.add_node("ask", ask)
    builder.add_node("after", _append("after"))
    builder.add_edge(lg.START, "before")
    builder.add_edge("before", "ask")
    builder.add_edge("ask", "after")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    rec.invoke("first", graph, {"log": []}, config)
    rec.state("paused", graph, config, tasks=True)
    rec.invoke("resumed", graph, lg.Command(resume="Ada"), config)
    rec.state("done", graph, config)


@scenario(tags=["interrupt"])
def scenario_interrupt_reruns_node(lg: Any, rec: Recorder) -> None:
    """On resume the node runs again from its start: side effects before interrupt repeat."""
    effects: list[str] = []

    def ask(state: State) -> dict[str, Any]:
        effects.append("before interrupt")
        answer = lg.interrupt("ok?")
        effects.append(f"after interrupt: {answer}")
        return {"answer": answer}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    rec.invoke("first", graph, {"log": []}, config)
    rec.record("effects after first", list(effects))
    rec.invoke("resumed", graph, lg.Command(resume="yes"), config)
    rec.record("effects after resume", list(effects))


@scenario(tags=["interrupt"])
def scenario_interrupt_several_in_one_node(lg: Any, rec: Recorder) -> None:
    """Three interrupts in one node are answered one resume at a time, in order."""
    runs: list[int] = []

    def form(state: State) -> dict[str, Any]:
        runs.append(1)
        first = lg.interrupt("first?")
        second = lg.interrupt("second?")
        third = lg.interrupt("third?")
        return {"answer": f"{first}/{second}/{third}"}

    builder = lg.StateGraph(State)
    builder.add_node("form", form)
    builder.add_edge(lg.START, "form")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    rec.invoke("start", graph, {"log": []}, config)
    for answer in ["one", "two", "three"]:
        rec.invoke(f"resume {answer}", graph, lg.Command(resume=answer), config)
    rec.record("node runs", len(runs))


@scenario(tags=["interrupt", "parallel"])
def scenario_interrupt_parallel_nodes_resume_map(lg: Any, rec: Recorder) -> None:
    """Interrupts in two nodes of one superstep, resumed at once with a map by id."""
    runs: list[str] = []

    def asker(name: str) -> Any:
        def node(state: State) -> dict[str, Any]:
            runs.append(name)
            return {"log": [f"{name}={lg.interrupt(f'{name}?')}"]}

        return node

    builder = lg.StateGraph(State)
    builder.add_node("left", asker("left"))
    builder.add_node("right", asker("right"))
    builder.add_node("join", _append("join"))
    builder.add_edge(lg.START, "left")
    builder.add_edge(lg.START, "right")
    builder.add_edge(["left", "right"], "join")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    result = graph.invoke({"log": []}, config)
    pending = result["__interrupt__"]
    rec.record("pending values", sorted(item.value for item in pending))
    rec.record("state keys", sorted(key for key in result if key != "__interrupt__"))
    snapshot = graph.get_state(config)
    rec.record("next", sorted(snapshot.next))
    answers = {item.id: f"answer to {item.value}" for item in pending}
    rec.invoke("resumed", graph, lg.Command(resume=answers), config)
    rec.record("runs", sorted(runs))


@scenario(tags=["interrupt", "parallel"])
def scenario_interrupt_parallel_plain_resume_fails(lg: Any, rec: Recorder) -> None:
    """With two pending interrupts, a resume value that is not a map is refused."""

    def asker(name: str) -> Any:
        def node(state: State) -> dict[str, Any]:
            return {"log": [lg.interrupt(name)]}

        return node

    builder = lg.StateGraph(State)
    builder.add_node("p", asker("p"))
    builder.add_node("q", asker("q"))
    builder.add_edge(lg.START, "p")
    builder.add_edge(lg.START, "q")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": []}, config)
    rec.invoke("plain resume", graph, lg.Command(resume="x"), config)


@scenario(tags=["interrupt", "parallel"])
def scenario_interrupt_sibling_write_kept(lg: Any, rec: Recorder) -> None:
    """A sibling that finished in the interrupted superstep is not re-run on resume."""
    runs: list[str] = []

    def quick(state: State) -> dict[str, Any]:
        runs.append("quick")
        return {"log": ["quick"]}

    def ask(state: State) -> dict[str, Any]:
        runs.append("ask")
        return {"log": [f"ask={lg.interrupt('?')}"]}

    builder = lg.StateGraph(State)
    builder.add_node("quick", quick)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "quick")
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    rec.invoke("first", graph, {"log": []}, config)
    rec.state("paused", graph, config)
    rec.invoke("resumed", graph, lg.Command(resume="fine"), config)
    rec.record("runs", sorted(runs))


@scenario(tags=["interrupt", "breakpoint"])
def scenario_interrupt_before(lg: Any, rec: Recorder) -> None:
    """interrupt_before pauses ahead of the node; invoke(None) continues."""
    builder = lg.StateGraph(State)
    for name in ["a", "b", "c"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    graph = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    config = _thread("t")
    rec.invoke("first", graph, {"log": []}, config)
    rec.state("paused", graph, config)
    rec.invoke("continued", graph, None, config)
    rec.state("done", graph, config)


@scenario(tags=["interrupt", "breakpoint"])
def scenario_interrupt_after(lg: Any, rec: Recorder) -> None:
    """interrupt_after pauses once the node's writes are applied."""
    builder = lg.StateGraph(State)
    for name in ["a", "b", "c"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    graph = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_after=["a", "b"])
    config = _thread("t")
    rec.invoke("first", graph, {"log": []}, config)
    rec.state("after a", graph, config)
    rec.invoke("second", graph, None, config)
    rec.state("after b", graph, config)
    rec.invoke("third", graph, None, config)


@scenario(tags=["interrupt", "breakpoint", "stream"])
def scenario_interrupt_before_stream(lg: Any, rec: Recorder) -> None:
    """Streaming up to a breakpoint, then streaming the rest."""
    builder = lg.StateGraph(State)
    for name in ["a", "b"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    config = _thread("t")
    rec.stream("first", graph, {"log": []}, config, stream_mode=["updates", "values"])
    rec.stream("rest", graph, None, config, stream_mode=["updates", "values"])


@scenario(tags=["interrupt", "breakpoint"])
def scenario_interrupt_before_with_update_state(lg: Any, rec: Recorder) -> None:
    """Edit the state at a breakpoint, then continue: the node sees the edit."""
    seen: list[Any] = []

    def b(state: State) -> dict[str, Any]:
        seen.append(state.get("answer"))
        return {"log": ["b"]}

    builder = lg.StateGraph(State)
    builder.add_node("a", _append("a"))
    builder.add_node("b", b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    config = _thread("t")
    graph.invoke({"log": []}, config)
    graph.update_state(config, {"answer": "edited"})
    rec.state("edited", graph, config, metadata=True)
    rec.invoke("continued", graph, None, config)
    rec.record("b saw", seen)


@scenario(tags=["interrupt", "command"])
def scenario_command_update_and_resume(lg: Any, rec: Recorder) -> None:
    """Command(update=..., resume=...) applies the update and answers the interrupt."""
    seen: list[Any] = []

    def ask(state: State) -> dict[str, Any]:
        reply = lg.interrupt("reply?")
        seen.append((state.get("answer"), reply))
        return {"log": [f"reply={reply}"]}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": [], "answer": "orig"}, config)
    rec.invoke("resumed", graph, lg.Command(update={"answer": "patched"}, resume="hello"), config)
    rec.record("node saw", seen)


@scenario(tags=["interrupt", "stream"])
def scenario_interrupt_in_updates_stream(lg: Any, rec: Recorder) -> None:
    """The interrupt shows as an __interrupt__ chunk in updates and values streams."""

    def ask(state: State) -> dict[str, Any]:
        return {"answer": lg.interrupt("q")}

    builder = lg.StateGraph(State)
    builder.add_node("first", _append("first"))
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "first")
    builder.add_edge("first", "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    rec.stream("updates", graph, {"log": []}, _thread("u"), stream_mode=["updates", "values"])
    rec.stream("updates only", graph, {"log": []}, _thread("v"), stream_mode="updates")
    rec.stream(
        "resume", graph, lg.Command(resume="a"), _thread("u"), stream_mode=["updates", "values"]
    )


@scenario(tags=["interrupt"])
def scenario_interrupt_without_checkpointer(lg: Any, rec: Recorder) -> None:
    """Without a checkpointer, invoke still returns the interrupt."""

    def ask(state: State) -> dict[str, Any]:
        return {"answer": lg.interrupt({"need": "input"})}

    builder = lg.StateGraph(State)
    builder.add_node("first", _append("first"))
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "first")
    builder.add_edge("first", "ask")
    rec.invoke("invoke", builder.compile(), {"log": []})


@scenario(tags=["interrupt"])
def scenario_interrupt_resume_then_new_input(lg: Any, rec: Recorder) -> None:
    """New input on a paused thread drops the pending interrupt and starts again."""
    asked: list[int] = []

    def ask(state: State) -> dict[str, Any]:
        asked.append(1)
        return {"answer": lg.interrupt("q")}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": ["one"]}, config)
    rec.invoke("new input", graph, {"log": ["two"]}, config)
    rec.invoke("resume", graph, lg.Command(resume="r"), config)
    rec.record("asked", len(asked))


@scenario(tags=["interrupt", "cycle"])
def scenario_interrupt_in_loop(lg: Any, rec: Recorder) -> None:
    """An interrupting node inside a loop asks again on each pass."""

    def ask(state: State) -> dict[str, Any]:
        return {"log": [lg.interrupt(f"round {len(state['log'])}")]}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    builder.add_conditional_edges("ask", lambda state: lg.END if len(state["log"]) >= 3 else "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    rec.invoke("start", graph, {"log": []}, config)
    for answer in ["x", "y", "z"]:
        rec.invoke(f"resume {answer}", graph, lg.Command(resume=answer), config)


@scenario(tags=["interrupt", "breakpoint"])
def scenario_interrupt_before_all(lg: Any, rec: Recorder) -> None:
    """interrupt_before="*" pauses ahead of every superstep."""
    builder = lg.StateGraph(State)
    for name in ["a", "b"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before="*")
    config = _thread("t")
    rec.invoke("first", graph, {"log": []}, config)
    rec.state("before a", graph, config)
    rec.invoke("second", graph, None, config)
    rec.state("before b", graph, config)
    rec.invoke("third", graph, None, config)
    rec.state("done", graph, config)


@scenario(tags=["interrupt", "send"])
def scenario_interrupt_in_send_target(lg: Any, rec: Recorder) -> None:
    """Send targets that interrupt: each pending item is answered through the id map."""
    runs: list[str] = []

    class Work(TypedDict):
        item: str

    def fan_out(state: State) -> list[Any]:
        return [lg.Send("review", {"item": item}) for item in ["x", "y"]]

    def review(arg: Work) -> dict[str, Any]:
        runs.append(arg["item"])
        verdict = lg.interrupt(f"approve {arg['item']}?")
        return {"log": [f"{arg['item']}:{verdict}"]}

    builder = lg.StateGraph(State)
    builder.add_node("review", review)
    builder.add_conditional_edges(lg.START, fan_out, ["review"])
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    result = graph.invoke({"log": []}, config)
    pending = result["__interrupt__"]
    rec.record("pending", sorted(item.value for item in pending))
    answers = {item.id: item.value.split()[1].rstrip("?").upper() for item in pending}
    rec.invoke("resumed", graph, lg.Command(resume=answers), config)
    rec.record("runs", sorted(runs))


@scenario(tags=["interrupt"])
def scenario_interrupt_resume_by_id_single(lg: Any, rec: Recorder) -> None:
    """A single pending interrupt may also be resumed through a map by its id."""

    def ask(state: State) -> dict[str, Any]:
        return {"answer": lg.interrupt("q")}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    result = graph.invoke({"log": []}, config)
    (pending,) = result["__interrupt__"]
    rec.invoke("resumed", graph, lg.Command(resume={pending.id: "by id"}), config)


@scenario(tags=["interrupt", "subgraph", "stream"])
def scenario_interrupt_subgraph_stream(lg: Any, rec: Recorder) -> None:
    """Streaming with subgraphs=True through an interrupt inside a child graph."""

    def ask(state: State) -> dict[str, Any]:
        return {"answer": lg.interrupt("child asks")}

    child_builder = lg.StateGraph(State)
    child_builder.add_node("ask", ask)
    child_builder.add_edge(lg.START, "ask")

    builder = lg.StateGraph(State)
    builder.add_node("child", child_builder.compile())
    builder.add_node("after", _append("after"))
    builder.add_edge(lg.START, "child")
    builder.add_edge("child", "after")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    rec.stream("first", graph, {"log": []}, config, stream_mode="updates", subgraphs=True)
    rec.stream(
        "resume", graph, lg.Command(resume="ok"), config, stream_mode="updates", subgraphs=True
    )


@scenario(tags=["interrupt", "time-travel"])
def scenario_interrupt_replay_asks_again(lg: Any, rec: Recorder) -> None:
    """Replaying from a checkpoint before an interrupting node asks the question again."""

    def ask(state: State) -> dict[str, Any]:
        return {"answer": lg.interrupt("again?")}

    builder = lg.StateGraph(State)
    builder.add_node("a", _append("a"))
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = _thread("t")
    graph.invoke({"log": []}, config)
    graph.invoke(lg.Command(resume="first answer"), config)
    before_ask = next(s for s in graph.get_state_history(config) if s.next == ("ask",))
    rec.invoke("replay", graph, None, before_ask.config)
    rec.invoke("answer again", graph, lg.Command(resume="second answer"), config)


@scenario(tags=["interrupt", "breakpoint", "parallel"])
def scenario_interrupt_after_parallel_node(lg: Any, rec: Recorder) -> None:
    """interrupt_after one of two parallel nodes pauses after their whole superstep."""
    builder = lg.StateGraph(State)
    for name in ["p", "q", "r"]:
        builder.add_node(name, _append(name))
    builder.add_edge(lg.START, "p")
    builder.add_edge(lg.START, "q")
    builder.add_edge("p", "r")
    graph = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_after=["q"])
    config = _thread("t")
    rec.invoke("first", graph, {"log": []}, config)
    rec.state("paused", graph, config)
    rec.invoke("continued", graph, None, config)
