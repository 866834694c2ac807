"""Spec: the SQLite savers encode each chat message once, and store exactly what they did before.

A message a node returns sits in its task's pending write, in the
checkpoint's tail of the messages list, and in every whole copy of that
list. The savers' serializer encodes it once per content and splices those
bytes into each record, which stay byte for byte what flowcore's JSON
serializer writes: existing files read the same, and a message changed in
place is stored with its new content.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.checkpoint import JsonSerializer
from flowcore.compat.langgraph import (
    END,
    START,
    AIMessage,
    AsyncSqliteSaver,
    HumanMessage,
    SqliteSaver,
    StateGraph,
    ToolMessage,
    add_messages,
)
from flowcore.compat.langgraph._messages import BaseMessage
from flowcore.compat.langgraph._savers_encoding import (
    SPLICE_DEPTH,
    ReusingSerializer,
    reusing,
)
from flowcore.errors import SerializationError
from flowcore.secrets import SecretRedactor

PLAIN = JsonSerializer()


class Chat(TypedDict):
    i: int
    messages: Annotated[list[Any], add_messages]


def chat_graph(steps: int, saver: Any) -> Any:
    """A loop whose node appends one id-less AIMessage per step (the reducer gives the id)."""

    async def step(state: Chat) -> dict[str, Any]:
        n = state["i"] + 1
        return {"i": n, "messages": [AIMessage(f"message {n}")]}

    g = StateGraph(Chat)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["i"] >= steps else "step", ["step", END])
    return g.compile(checkpointer=saver)


@pytest.fixture
def dumps_per_message(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each message (by id, then content) was turned into data to encode."""
    counts: Counter[str] = Counter()
    original = BaseMessage.model_dump

    def counting(self: BaseMessage, *args: Any, **kwargs: Any) -> dict[str, Any]:
        counts[str(self.id or self.content)] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BaseMessage, "model_dump", counting)
    return counts


def rows(*messages: Any) -> list[dict[str, Any]]:
    """Records shaped as a saver writes them, holding ``messages`` where it puts them."""
    listed = list(messages)
    return [
        {"writes": [{"idx": 0, "channel": "messages", "path": "~step", "value": listed}]},
        {"writes": [{"idx": 0, "channel": "messages", "path": "~step", "value": listed[0]}]},
        {
            "thread_id": "langgraph/t/",
            "checkpoint_id": "c2",
            "writes": [
                [
                    ["channels", {"i": 2, "messages": listed}],
                    ["tails", {"messages": {"base": "c1", "links": 1, "items": listed}}],
                ]
            ],
            "cursor": {"blob_at": {"messages": "c2"}, "checkpoint": {"versions_seen": {}}},
            "metadata": {"step": 2},
        },
        # Not under "writes", or inside a tuple: encoded as usual.
        {"snapshot": {"values": {"messages": listed}}, "writes": [("x", listed)]},
    ]


MESSAGES: list[Any] = [
    AIMessage("plain", id="a1"),
    HumanMessage("no id yet"),
    AIMessage(
        [{"type": "text", "text": "blocks"}, "and text"],
        id="a2",
        tool_calls=[{"name": "search", "args": {"q": "x", "n": 1.0}, "id": "c1"}],
        usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    ),
    ToolMessage("result", tool_call_id="c1", id="t1", artifact=(1, 2), extra_flag=True),
    AIMessage("odd values", id="a3", additional_kwargs={"f": -0.0, "b": b"\x00", "t": (1,)}),
    AIMessage("not marshal data", id="a4", additional_kwargs={"when": dt.date(2026, 1, 1)}),
    AIMessage("a set", id="a5", additional_kwargs={"tags": {"b", "a"}}),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: str(m.content)[:12])
def test_every_record_is_byte_for_byte_what_the_json_serializer_writes(message: Any) -> None:
    s = ReusingSerializer(JsonSerializer())
    for _ in range(2):  # encoded, then reused
        for row in rows(message, AIMessage("second", id="z")):
            assert s.dumps(row) == PLAIN.dumps(row)
            assert s.loads(s.dumps(row)) == PLAIN.loads(PLAIN.dumps(row))


def test_a_message_changed_in_place_is_encoded_again_with_its_new_content() -> None:
    s = ReusingSerializer(JsonSerializer())
    message = AIMessage("first", id="m1", additional_kwargs={"n": 1})
    row = rows(message)[0]
    before = s.dumps(row)
    changes = [
        lambda: setattr(message, "content", "second"),
        lambda: setattr(message, "id", "m2"),
        # Equal by ==, but each is stored differently.
        lambda: message.additional_kwargs.__setitem__("n", 1.0),
        lambda: message.additional_kwargs.__setitem__("n", True),
        lambda: message.tool_calls.append({"name": "f", "args": {}, "id": "c"}),
        lambda: setattr(message, "surprise", "an extra field"),
    ]
    for change in changes:
        change()
        after = s.dumps(row)
        assert after == PLAIN.dumps(row)
        assert after != before
        before = after
    stored = s.loads(before)["writes"][0]["value"][0]
    assert stored.additional_kwargs == {"n": True}
    assert stored.surprise == "an extra field"


def test_a_value_holding_the_placeholder_token_is_encoded_plainly() -> None:
    s = ReusingSerializer(JsonSerializer())
    token = s._token
    for content in (f"{token}0", f"x {token}1 y", token):
        row = rows(AIMessage("m", id="1"), HumanMessage(content, id="2"))[2]
        assert s.dumps(row) == PLAIN.dumps(row)
        row["writes"][0].append(["note", {"text": f'"{token}0"'}])
        assert s.dumps(row) == PLAIN.dumps(row)


def test_the_nesting_limit_refuses_exactly_what_it_refused_before() -> None:
    s = ReusingSerializer(JsonSerializer())
    outcomes = set()
    for depth in range(85, 115):
        nested: Any = "leaf"
        for _ in range(depth):
            nested = [nested]
        for row in rows(AIMessage("deep", id=f"d{depth}", additional_kwargs={"x": nested})):
            try:
                expected: Any = PLAIN.dumps(row)
            except SerializationError as exc:
                expected = type(exc)
            try:
                got: Any = s.dumps(row)
            except SerializationError as exc:
                got = type(exc)
            assert got == expected
            outcomes.add(expected is SerializationError)
    assert outcomes == {True, False}  # the range crosses the limit


def test_messages_deeper_than_the_splice_depth_are_still_stored() -> None:
    s = ReusingSerializer(JsonSerializer())
    nested: Any = AIMessage("deep down", id="1")
    for _ in range(SPLICE_DEPTH + 2):
        nested = {"in": nested}
    row = {"writes": [nested]}
    assert s.dumps(row) == PLAIN.dumps(row)


def test_kept_encodings_stay_within_their_byte_budget() -> None:
    s = ReusingSerializer(JsonSerializer(), max_bytes=16384)
    for n in range(200):
        row = rows(AIMessage(f"message {n} " * 4, id=str(n)))[0]
        assert s.dumps(row) == PLAIN.dumps(row)
        assert s._kept <= 16384
    assert 0 < len(s._fragments) < 200
    s.forget()
    assert s._kept == 0
    assert not s._fragments


def test_a_redactor_set_later_scrubs_messages_as_before() -> None:
    inner = JsonSerializer()
    s = ReusingSerializer(inner)
    secret = "sk-test-0123456789abcdef"
    row = rows(AIMessage(f"the key is {secret}", id="1"))[2]
    assert secret.encode() in s.dumps(row)
    redactor = SecretRedactor()
    redactor.add(secret)
    inner.redactor = redactor
    assert s.dumps(row) == inner.dumps(row)
    assert secret.encode() not in s.dumps(row)


def test_only_the_plain_json_serializer_is_wrapped() -> None:
    assert isinstance(reusing(None), ReusingSerializer)
    assert isinstance(reusing(JsonSerializer()), ReusingSerializer)
    scrubbing = JsonSerializer(redactor=SecretRedactor())
    assert reusing(scrubbing) is scrubbing

    class Custom(JsonSerializer):
        pass

    custom = Custom()
    assert reusing(custom) is custom


@pytest.mark.parametrize("durability", ["async", "sync"])
async def test_a_growing_chat_encodes_each_message_once_per_run(
    tmp_path: Path, durability: str, dumps_per_message: Counter[str]
) -> None:
    steps = 40  # past several whole copies of the list (at 1, 2, 4, 8, 16, 32 items)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        graph = chat_graph(steps, saver)
        config = {"configurable": {"thread_id": "t"}}
        out = await graph.ainvoke({"i": 0, "messages": []}, config, durability=durability)
        assert [dumps_per_message[m.id] for m in out["messages"]] == [1] * steps
        assert [m.content for m in (await graph.aget_state(config)).values["messages"]] == [
            f"message {n}" for n in range(1, steps + 1)
        ]


async def test_the_sync_saver_encodes_each_message_once_too(
    tmp_path: Path, dumps_per_message: Counter[str]
) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        graph = chat_graph(12, saver)
        out = await graph.ainvoke({"i": 0, "messages": []}, {"configurable": {"thread_id": "t"}})
    assert [dumps_per_message[m.id] for m in out["messages"]] == [1] * 12


async def test_a_run_stores_the_records_the_plain_serializer_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[int] = []
    original = ReusingSerializer.dumps

    def compared(self: ReusingSerializer, value: Any, *, path: str = "") -> bytes:
        data = original(self, value, path=path)
        assert data == PLAIN.dumps(value, path=path)
        checked.append(len(data))
        return data

    original_many = ReusingSerializer.dumps_many

    def compared_many(self: ReusingSerializer, values: list[tuple[Any, str]]) -> list[bytes]:
        data = original_many(self, values)
        for (value, path), blob in zip(values, data, strict=True):
            assert blob == PLAIN.dumps(value, path=path)
            checked.append(len(blob))
        return data

    monkeypatch.setattr(ReusingSerializer, "dumps", compared)
    monkeypatch.setattr(ReusingSerializer, "dumps_many", compared_many)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        graph = chat_graph(20, saver)
        await graph.ainvoke({"i": 0, "messages": []}, {"configurable": {"thread_id": "t"}})
    assert len(checked) >= 40  # a write and a checkpoint per step


@pytest.mark.parametrize("durability", ["async", "sync"])
async def test_a_message_mutated_between_steps_is_stored_with_its_new_content(
    tmp_path: Path, durability: str
) -> None:
    # The node returns the same object each step, changed in place: add_messages
    # replaces it by id, and each checkpoint must hold the content of its own step.
    kept = AIMessage("draft 0", id="m1", additional_kwargs={"n": 0})

    async def step(state: Chat) -> dict[str, Any]:
        n = state["i"] + 1
        kept.content = f"draft {n}"
        kept.additional_kwargs["n"] = n
        return {"i": n, "messages": [kept]}

    g = StateGraph(Chat)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["i"] >= 6 else "step", ["step", END])
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        graph = g.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        await graph.ainvoke({"i": 0, "messages": [kept]}, config, durability=durability)
        seen = {}
        async for snapshot in graph.aget_state_history(config):
            if "i" not in snapshot.values:
                continue  # the checkpoint of the input, before it was applied
            (message,) = snapshot.values["messages"]
            assert message.content == f"draft {message.additional_kwargs['n']}"
            seen[snapshot.values["i"]] = message.content
        latest = await graph.aget_state(config)
    assert latest.values["messages"][0].content == "draft 6"
    if durability == "sync":  # each step stored before the next one changed the message
        assert seen == {i: f"draft {i}" for i in range(7)}


def test_a_class_the_serializer_writes_differently_is_encoded_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The quick encoding assumes the serializer's model layout; checked once per class.
    from flowcore.checkpoint import serde

    original = serde._class_ref
    monkeypatch.setattr(serde, "_class_ref", lambda *a: original(*a) + "#v2")
    s = ReusingSerializer(JsonSerializer())
    for n in range(3):
        row = rows(AIMessage(f"m{n}", id=str(n)))[2]
        assert s.dumps(row) == PLAIN.dumps(row)
        assert b"#v2" in s.dumps(row)
    assert s._heads[AIMessage] == b""
