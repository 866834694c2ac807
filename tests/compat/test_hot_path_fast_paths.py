"""Spec: the run loop's and the savers' fast paths give the answers of the general ones.

The hot path skips work a feature that is off does not need: no callback
frame when a run has no callbacks, no call of ``get()``/``is_available()``
for plain channel classes, no ``encode_write`` call for a plain write, an
``O(new)`` ``add_messages`` for the usual chat step, one pass of C
comparisons to prove that a stored message list is still what was stored.
These specs pin that each fast path is taken where it should be and that
everything it skips still happens where it must: a message changed in place
after it was stored is stored again (and reads back changed), an
``Overwrite`` or a ``Send`` is still encoded, a custom channel still answers
through its own methods, a patched ``uuid.uuid4`` still names new messages.
"""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from flowcore.compat.langgraph import (
    END,
    START,
    AIMessage,
    HumanMessage,
    InMemorySaver,
    Overwrite,
    RemoveMessage,
    Send,
    StateGraph,
    add_messages,
)
from flowcore.compat.langgraph import _add_messages as merging
from flowcore.compat.langgraph import _savers_layout as layout
from flowcore.compat.langgraph._channels import (
    BinaryOperatorAggregate,
    Channel,
    EphemeralValue,
    LastValue,
    LastValueAfterFinish,
    NamedBarrierValue,
)

from .conftest import Saver, stored
from .test_saver_tails import Recorder, how_stored


class Chat(TypedDict):
    i: int
    messages: Annotated[list[Any], add_messages]


# ---------------------------------------------------------------------- add_messages


def test_a_chat_step_appends_new_messages_and_gives_each_a_fresh_uuid4() -> None:
    old = [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")]
    new = [AIMessage("more"), AIMessage("and more")]
    merged = add_messages(old, new)
    assert merged[:2] == old
    assert merged[2:] == new
    assert merged is not old
    assert len(old) == 2
    ids = [m.id for m in new]
    assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in ids)
    assert len(set(ids)) == 2


def test_fresh_ids_are_uuid4_strings() -> None:
    ids = {merging.fresh_id() for _ in range(200)}
    assert len(ids) == 200
    for made in ids:
        parsed = uuid.UUID(made)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == made


def test_a_patched_uuid4_still_names_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    made = iter(uuid.UUID(f"00000000-0000-4000-8000-{i:012}") for i in range(10))
    monkeypatch.setattr(uuid, "uuid4", lambda: next(made))
    merged = add_messages([HumanMessage("hi", id="h1")], [AIMessage("a"), AIMessage("b")])
    assert [m.id for m in merged] == [
        "h1",
        "00000000-0000-4000-8000-000000000000",
        "00000000-0000-4000-8000-000000000001",
    ]


def test_an_old_message_without_an_id_gets_one_as_before() -> None:
    old = [HumanMessage("hi", id="h1"), HumanMessage("no id")]
    old[1].id = None
    merged = add_messages(old, [AIMessage("new")])
    assert [m.content for m in merged] == ["hi", "no id", "new"]
    assert old[1].id is not None
    assert uuid.UUID(old[1].id).version == 4


def test_one_message_object_sent_twice_is_merged_once() -> None:
    twice = AIMessage("same")
    merged = add_messages([HumanMessage("hi", id="h1")], [twice, twice])
    assert merged == [merged[0], twice]
    assert len(merged) == 2


def test_new_messages_with_ids_still_replace_and_remove() -> None:
    old = [HumanMessage("hi", id="h1"), AIMessage("draft", id="a1")]
    merged = add_messages(old, [AIMessage("final", id="a1"), AIMessage("new")])
    assert [m.content for m in merged] == ["hi", "final", "new"]
    assert [m.content for m in add_messages(merged, [RemoveMessage(id="h1")])] == [
        "final",
        "new",
    ]


def test_message_likes_and_formats_take_the_general_merge() -> None:
    merged = add_messages([HumanMessage("hi", id="h1")], [("ai", "tuple form")])
    assert [(m.type, m.content) for m in merged] == [("human", "hi"), ("ai", "tuple form")]
    shaped = add_messages(format="langchain-openai")(
        [HumanMessage("hi", id="h1")], [AIMessage([{"type": "text", "text": "x"}])]
    )
    assert shaped[-1].content == "x"


# ---------------------------------------------------------------------- the stored-list proof


def test_the_model_proof_is_one_triple_per_item() -> None:
    messages = add_messages([], [HumanMessage("q", id="h"), AIMessage("a", id="a")])
    bulk = layout._bulk(layout._witnesses(messages) or [])
    assert bulk is not None
    assert bulk.how == layout._MODEL
    assert bulk.values == [(type(m), m.__dict__, m.__pydantic_extra__) for m in messages]
    assert layout._bulk_matches([*messages, AIMessage("later", id="l")], bulk)
    messages[1].additional_kwargs["k"] = "v"
    assert not layout._bulk_matches(messages, bulk)


async def test_a_message_mutated_in_place_after_it_was_stored_reads_back_mutated(
    saver: Saver,
) -> None:
    rec = Recorder(saver)
    messages = add_messages([], [HumanMessage(f"m{i}", id=f"m{i}") for i in range(4)])
    await rec.put({"messages": messages})
    messages = add_messages(messages, [AIMessage("next")])
    await rec.put({"messages": messages})
    # The very objects the saver witnessed: one of them edited in place, then one more.
    messages[1].content = "edited in place"
    messages = add_messages(messages, [AIMessage("after the edit")])
    changed = await rec.put({"messages": messages})
    assert [how_stored(s, "messages") for s in await stored(saver)] == ["whole", "tail", "whole"]
    await rec.check()
    got = await saver.aget_tuple(
        {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": changed}}
    )
    assert got is not None
    assert got.checkpoint["channel_values"]["messages"][1].content == "edited in place"


async def test_a_node_that_edits_a_stored_message_in_place_is_saved_with_the_edit() -> None:
    async def step(state: Chat) -> dict[str, Any]:
        n = state["i"] + 1
        if n == 3:
            state["messages"][0].content = "edited by step 3"
        return {"i": n, "messages": [AIMessage(f"step {n}")]}

    g = StateGraph(Chat)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["i"] >= 5 else "step", ["step", END])
    graph = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"i": 0, "messages": [HumanMessage("first", id="h")]}, config)
    by_step = {
        s.values["i"]: s.values["messages"][0].content
        async for s in graph.aget_state_history(config)
        if "i" in s.values
    }
    assert by_step[5] == "edited by step 3"
    assert by_step[3] == "edited by step 3"
    assert by_step[2] == "first"  # stored before the edit


# ---------------------------------------------------------------------- the run loop


def test_plain_read_marks_only_classes_that_keep_get_and_is_available() -> None:
    assert LastValue.plain_read
    assert EphemeralValue.plain_read
    assert BinaryOperatorAggregate.plain_read
    assert not LastValueAfterFinish.plain_read
    assert not NamedBarrierValue.plain_read

    class Doubled(LastValue):
        __slots__ = ()

        def get(self) -> Any:
            return self.value * 2

    assert not Doubled.plain_read
    assert Channel.plain_read


async def test_plain_nodes_returning_none_or_updates_run_without_callbacks() -> None:
    class S(TypedDict):
        x: int
        log: Annotated[list[str], operator.add]

    async def nothing(state: S) -> None:
        return None

    async def bump(state: S) -> dict[str, Any]:
        return {"x": state["x"] + 1, "log": [f"x={state['x']}"], "not_a_key": 1}

    g = StateGraph(S)
    g.add_node("nothing", nothing)
    g.add_node("bump", bump)
    g.add_edge(START, "nothing")
    g.add_edge("nothing", "bump")
    g.add_edge("bump", END)
    app = g.compile()
    assert await app.ainvoke({"x": 1, "log": []}) == {"x": 2, "log": ["x=1"]}
    chunks = [c async for c in app.astream({"x": 1, "log": []}, stream_mode="updates")]
    assert chunks == [{"nothing": None}, {"bump": {"x": 2, "log": ["x=1"]}}]


async def test_overwrites_and_sends_are_still_encoded_in_stored_writes() -> None:
    class S(TypedDict):
        items: Annotated[list[int], operator.add]
        done: Annotated[list[int], operator.add]

    def fan(state: S) -> list[Send]:
        return [Send("work", {"item": i}) for i in state["items"]]

    async def work(arg: dict[str, int]) -> dict[str, Any]:
        return {"done": [arg["item"]]}

    async def reset(state: S) -> dict[str, Any]:
        return {"done": Overwrite(sorted(state["done"]))}

    g = StateGraph(S)
    g.add_node("work", work)
    g.add_node("reset", reset)
    g.add_conditional_edges(START, fan, ["work"])
    g.add_edge("work", "reset")
    g.add_edge("reset", END)
    saver = InMemorySaver()
    app = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    out = await app.ainvoke({"items": [3, 1, 2], "done": []}, config)
    assert out == {"items": [3, 1, 2], "done": [1, 2, 3]}
    writes = [
        (channel, value)
        async for t in saver.alist(config)
        for _, channel, value in t.pending_writes or ()
    ]
    # Stored in the savers' plain form (see encode_write), the plain writes as written.
    assert ("done", {"__overwrite__": [1, 2, 3]}) in writes
    assert ("done", [3]) in writes
    assert ("items", [3, 1, 2]) in writes
    sends = [v for c, v in writes if c == "__pregel_tasks"]
    assert sends == [{"__send__": {"node": "work", "arg": {"item": i}}} for i in (3, 1, 2)]
    assert all(not isinstance(v, Overwrite | Send) for _, v in writes)


@pytest.mark.parametrize(
    "ns", [0, 1_700_000_000_000_000_000, 1_700_000_000_123_456_789, 1_795_602_348_374_246_000]
)
def test_checkpoint_timestamps_read_as_datetime_isoformat_writes_them(
    monkeypatch: pytest.MonkeyPatch, ns: int
) -> None:
    import datetime as dt
    import time

    from flowcore.compat.langgraph import _loop_helpers

    monkeypatch.setattr(time, "time_ns", lambda: ns)
    expected = dt.datetime.fromtimestamp(ns // 1000 / 1_000_000, dt.UTC).isoformat()
    assert _loop_helpers.utc_now_iso() == expected
    assert _loop_helpers.utc_now_iso() == expected  # the second's text, reused


def test_checkpoint_ids_keep_their_shape_and_order() -> None:
    from flowcore.compat.langgraph._loop_helpers import new_checkpoint_id

    first = new_checkpoint_id()
    later = new_checkpoint_id(first)
    assert [len(part) for part in first.split("-")] == [8, 4, 4, 4, 12]
    assert later > first
    assert uuid.UUID(first)  # 32 hex digits in uuid groups
