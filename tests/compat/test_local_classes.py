"""Spec: state classes defined inside a function checkpoint as LangGraph's savers keep them.

LangGraph's serde writes an object whose class it could not import back (a
pydantic model or dataclass defined inside a function) and reads it back as
its fields. Compat's savers do the same: the graph runs, interrupts and
resumes, and the stored value reads back as a dict of the object's fields.
Values without such objects are stored exactly as before, and a value that
still cannot be stored is refused with the serializer's own error.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from flowcore.compat.langgraph import (
    END,
    START,
    AIMessage,
    AnyMessage,
    Command,
    HumanMessage,
    StateGraph,
    add_messages,
    interrupt,
)
from flowcore.compat.langgraph._local_classes import local_fields
from flowcore.errors import SerializationError

from .conftest import Saver


def _local_objects() -> tuple[Any, Any]:
    class Inner(BaseModel):
        yo: int

    @dataclasses.dataclass
    class Point:
        x: int
        inner: Any

    return Inner(yo=1), Point(2, Inner(yo=3))


def test_local_fields_replaces_only_objects_of_local_classes() -> None:
    inner, point = _local_objects()
    kept = {"a": [1, ("b", {"c"})]}
    assert local_fields(kept) is kept
    assert local_fields({"m": inner, "p": [point], "t": (inner,)}) == {
        "m": {"yo": 1},
        "p": [{"x": 2, "inner": {"yo": 3}}],
        "t": ({"yo": 1},),
    }


async def test_a_graph_with_local_state_classes_interrupts_and_resumes(saver: Saver) -> None:
    class Inner(BaseModel):
        yo: int

    class State(BaseModel):
        query: str
        inner: Inner
        answer: str | None = None

    def node(state: State) -> dict[str, Any]:
        assert isinstance(state.inner, Inner)  # the stored fields validate into the model
        return {"answer": f"{state.query}:{state.inner.yo}"}

    graph = (
        StateGraph(State)
        .add_node("n", node)
        .add_edge(START, "n")
        .add_edge("n", END)
        .compile(checkpointer=saver, interrupt_before=["n"])
    )
    config = {"configurable": {"thread_id": "local"}}
    await graph.ainvoke(State(query="q", inner=Inner(yo=1)), config)
    assert (await graph.ainvoke(None, config)) == {
        "query": "q",
        "inner": {"yo": 1},
        "answer": "q:1",
    }
    history = [s.values async for s in graph.aget_state_history(config)]
    assert history[:2] == [
        {"query": "q", "inner": {"yo": 1}, "answer": "q:1"},
        {"query": "q", "inner": {"yo": 1}},
    ]


async def test_a_value_that_still_cannot_be_stored_is_refused(saver: Saver) -> None:
    graph = (
        StateGraph(dict)
        .add_node("n", lambda state: {"x": object()})
        .add_edge(START, "n")
        .compile(checkpointer=saver)
    )
    with pytest.raises(SerializationError, match=r"builtins\.object"):
        await graph.ainvoke({"x": 1}, {"configurable": {"thread_id": "bad"}})


async def test_messages_in_a_pydantic_input_are_not_streamed_again(saver: Saver) -> None:
    class PydanticState(BaseModel):
        messages: Annotated[list[AnyMessage], add_messages] = Field(default_factory=list)

    def propose(state: PydanticState) -> Command[Any]:
        return Command(goto="approve", update={"messages": [AIMessage("Proposal", id="p")]})

    def approve(state: PydanticState) -> dict[str, Any]:
        answer = interrupt("ok?")
        return {"messages": [HumanMessage(answer, id="h")]}

    subgraph = (
        StateGraph(PydanticState)
        .add_node("propose", propose)
        .add_node("approve", approve)
        .add_edge(START, "propose")
        .compile(checkpointer=saver)
    )
    graph = (
        StateGraph(PydanticState)
        .add_node("sub", subgraph)
        .add_edge(START, "sub")
        .compile(checkpointer=saver)
    )
    config = {"configurable": {"thread_id": "dedupe"}}

    async def ids(arg: Any) -> list[str]:
        chunks = graph.astream(arg, config, stream_mode="messages", subgraphs=True)
        return [message.id async for _, (message, _meta) in chunks]

    assert "p" in await ids({"messages": [HumanMessage("go", id="in")]})
    # The resumed subgraph's input holds "p" already: LangGraph shows it once only.
    assert "p" not in await ids(Command(resume="yes"))
