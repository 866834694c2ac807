"""Spec: ``Command`` on a native graph: goto and update from a node, resume as input.

A node may return ``Command(update=..., goto=...)``: the update is checked
and applied like any update, and ``goto`` (a node name, a Send, or a list)
adds targets on top of the node's static edges. A declared destination runs
in the superstep after the node, with its static successors; an undeclared
one starts the next pass. As run input, ``Command(resume=...)`` answers an
interrupt like ``Resume``, after writing ``update`` into the thread.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest

from flowcore import (
    END,
    START,
    Command,
    Graph,
    InMemoryCheckpointer,
    InvalidInputError,
    InvalidUpdateError,
    ResumeError,
    RoutingError,
    Send,
    append,
    interrupt,
)


class S(TypedDict):
    log: Annotated[list[str], append]
    n: int


def logs(name: str) -> Any:
    def node(state: S) -> dict[str, Any]:
        return {"log": [name]}

    return node


# ----------------------------------------------------------------- goto/update
async def test_goto_and_update_from_a_node() -> None:
    def decide(state: S) -> Command:
        return Command(update={"log": ["decide"], "n": 1}, goto="b")

    g = (
        Graph(S)
        .add_node("decide", decide, destinations=["a", "b"])
        .add_node("a", logs("a"))
        .add_node("b", logs("b"))
        .add_edge(START, "decide")
    )
    result = await g.compile().run({"log": [], "n": 0})
    assert result.status == "completed"
    assert result.state == {"log": ["decide", "b"], "n": 1}
    assert [r.status for r in result.node_runs if r.node == "a"] == ["skipped"]
    assert result.outputs["decide"] == {"log": ["decide"], "n": 1}


async def test_a_declared_goto_runs_beside_the_static_successors() -> None:
    g = (
        Graph(S)
        .add_node("decide", lambda s: Command(goto="extra"), destinations=["extra"])
        .add_node("next", logs("next"))
        .add_node("extra", logs("extra"))
        .add_edge(START, "decide")
        .add_edge("decide", "next")
    )
    result = await g.compile().run({"log": [], "n": 0})
    assert result.state["log"] == ["next", "extra"]
    runs = {r.node: r.superstep for r in result.node_runs}
    assert runs["next"] == runs["extra"] == 2


async def test_an_undeclared_goto_starts_the_next_pass() -> None:
    g = (
        Graph(S)
        .add_node("decide", lambda s: Command(goto="extra"))
        .add_node("next", logs("next"))
        .add_node("after", logs("after"))
        .add_node("extra", logs("extra"))
        .add_edge(START, "decide")
        .add_edge("decide", "next")
        .add_edge("next", "after")
        .add_edge(START, "extra")  # extra is wired, so it compiles as reachable
    )
    result = await g.compile().run({"log": [], "n": 0})
    assert result.status == "completed"
    # Pass 1: decide and extra (from START), next, after; then the goto's pass: extra again.
    assert result.state["log"] == ["extra", "next", "after", "extra"]


async def test_goto_loops_until_a_node_stops_it() -> None:
    def count(state: S) -> Command:
        n = state["n"] + 1
        return Command(update={"n": n}, goto="count" if n < 5 else END)

    g = Graph(S).add_node("count", count, destinations=["count", END]).add_edge(START, "count")
    result = await g.compile().run({"log": [], "n": 0})
    assert result.status == "completed"
    assert result.state["n"] == 5
    assert result.supersteps == 5


async def test_goto_may_send() -> None:
    def fan(state: S) -> Command:
        return Command(goto=[Send("work", "x"), Send("work", "y"), "done"])

    g = (
        Graph(S)
        .add_node("fan", fan, destinations=["work", "done"])
        .add_node("work", lambda arg: {"log": [f"work:{arg}"]})
        .add_node("done", logs("done"))
        .add_edge(START, "fan")
    )
    result = await g.compile().run({"log": [], "n": 0})
    assert result.state["log"] == ["work:x", "work:y", "done"]


async def test_goto_adds_to_a_router_rather_than_replacing_it() -> None:
    g = (
        Graph(S)
        .add_node("decide", lambda s: Command(goto="a"), destinations=["a"])
        .add_node("a", logs("a"))
        .add_node("b", logs("b"))
        .add_edge(START, "decide")
        .add_conditional_edges("decide", lambda s: "b", ["b"])
    )
    result = await g.compile().run({"log": [], "n": 0})
    assert result.state["log"] == ["a", "b"]


# --------------------------------------------------------------------- errors
async def test_goto_to_an_unknown_node_is_a_routing_error_naming_both() -> None:
    g = Graph(S).add_node("decide", lambda s: Command(goto="nowhere")).add_edge(START, "decide")
    result = await g.compile().run({"log": [], "n": 0})
    assert result.status == "failed"
    (error,) = result.errors
    assert isinstance(error, RoutingError)
    assert error.node == "decide"
    assert "'nowhere'" in str(error)


async def test_goto_outside_declared_destinations_is_a_routing_error() -> None:
    g = (
        Graph(S)
        .add_node("decide", lambda s: Command(goto=Send("b", 1)), destinations=["a"])
        .add_node("a", logs("a"))
        .add_node("b", logs("b"))
        .add_edge(START, "decide")
        .add_edge("decide", "b")
    )
    result = await g.compile().run({"log": [], "n": 0})
    (error,) = result.errors
    assert isinstance(error, RoutingError)
    assert error.node == "decide"
    assert "destinations" in str(error)
    assert "'b'" in str(error)


async def test_a_goto_that_is_not_a_target_is_a_routing_error() -> None:
    g = Graph(S).add_node("decide", lambda s: Command(goto=[3])).add_edge(START, "decide")
    result = await g.compile().run({"log": [], "n": 0})
    (error,) = result.errors
    assert isinstance(error, RoutingError)
    assert "node name or a Send" in str(error)


async def test_a_commands_update_is_checked_like_any_update() -> None:
    g = (
        Graph(S)
        .add_node("decide", lambda s: Command(update={"nope": 1}), destinations=[])
        .add_edge(START, "decide")
    )
    result = await g.compile().run({"log": [], "n": 0})
    (error,) = result.errors
    assert isinstance(error, InvalidUpdateError)
    assert error.node == "decide"


async def test_command_as_input_needs_a_thread() -> None:
    g = Graph(S).add_node("a", logs("a")).add_edge(START, "a").compile()
    with pytest.raises(InvalidInputError, match="Command"):
        await g.run(Command(resume="x"))


# ------------------------------------------------------------- resume as input
def approval_graph() -> Graph:
    def ask(state: S) -> dict[str, Any]:
        answer = interrupt(f"n is {state['n']}")
        return {"log": [f"{answer} at n={state['n']}"]}

    return Graph(S).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)


async def test_command_resume_answers_like_resume() -> None:
    app = approval_graph().compile(checkpointer=InMemoryCheckpointer())
    assert (await app.run({"log": [], "n": 1}, thread_id="t")).status == "interrupted"
    done = await app.run(Command(resume="ok"), thread_id="t")
    assert done.status == "completed"
    assert done.state["log"] == ["ok at n=1"]


async def test_command_resume_by_interrupt_id() -> None:
    app = approval_graph().compile(checkpointer=InMemoryCheckpointer())
    (asked,) = (await app.run({"log": [], "n": 1}, thread_id="t")).interrupts
    done = await app.run(Command(resume={asked.id: "by id"}), thread_id="t")
    assert done.state["log"] == ["by id at n=1"]


async def test_command_update_is_written_before_the_resumed_node_runs_again() -> None:
    store = InMemoryCheckpointer()
    app = approval_graph().compile(checkpointer=store)
    await app.run({"log": [], "n": 1}, thread_id="t")
    done = await app.run(Command(update={"n": 2}, resume="ok"), thread_id="t")
    assert done.state == {"log": ["ok at n=2"], "n": 2}
    sources = [s.metadata.get("source") for s in await app.get_state_history("t")]
    assert "update" in sources


async def test_a_command_resume_that_cannot_be_answered_writes_nothing() -> None:
    store = InMemoryCheckpointer()
    app = approval_graph().compile(checkpointer=store, interrupt_before=["ask"])
    await app.run({"log": [], "n": 1}, thread_id="t")  # paused before ask: nobody asked yet
    before = len(await app.get_state_history("t"))
    with pytest.raises(ResumeError, match="not waiting for an answer"):
        await app.run(Command(update={"n": 2}, resume="ok"), thread_id="t")
    assert len(await app.get_state_history("t")) == before
    assert (await app.get_state("t")).values["n"] == 1


async def test_command_goto_as_input_is_refused() -> None:
    app = approval_graph().compile(checkpointer=InMemoryCheckpointer())
    await app.run({"log": [], "n": 1}, thread_id="t")
    with pytest.raises(InvalidInputError, match="goto"):
        await app.run(Command(goto="ask"), thread_id="t")
