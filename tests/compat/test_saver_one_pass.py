"""Spec: the savers' one-pass encoding writes, or refuses, what flowcore's JSON serializer does.

A record that is plain JSON apart from flowcore's own chat messages is
walked once and handed to the C encoder as it is; the messages' bytes are
spliced in. Every other record (a tuple, a dataclass, a NaN, a non-string
key, a lone surrogate, an int too long to write, nesting past the limit,
a LangChain message) must not take that path: it gets the old result, byte
for byte, or the same typed error. ``dumps_many`` encodes a store's batch
in one call and reads each message object once.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcore.checkpoint import JsonSerializer
from flowcore.checkpoint.serde import MAX_NESTING
from flowcore.compat.langgraph import AIMessage, HumanMessage
from flowcore.compat.langgraph._savers_encoding import SPLICE_DEPTH, ReusingSerializer
from flowcore.errors import SerializationError

PLAIN = JsonSerializer()


@dataclasses.dataclass
class Point:
    x: int
    y: int


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def checkpoint_row(extra: Any, *messages: Any) -> dict[str, Any]:
    """A checkpoint record as the SQLite saver builds one, with ``extra`` in a channel."""
    return {
        "thread_id": "langgraph/t/",
        "checkpoint_id": "c2",
        "parent_id": "c1",
        "step": 2,
        "created_at": 1795610888.638881,
        "writes": [
            [
                ["channels", {"i": 2, "extra": extra}],
                ["tails", {"messages": {"base": "c1", "links": 1, "items": list(messages)}}],
            ]
        ],
        "snapshot": None,
        "cursor": {"blob_at": {"messages": "c2"}, "checkpoint": {"versions_seen": {}}},
        "metadata": {"step": 2, "parents": {}},
    }


def write_row(extra: Any, *messages: Any) -> dict[str, Any]:
    """A task's pending-write record, with ``extra`` written to a second channel."""
    return {
        "writes": [
            {"idx": 0, "channel": "messages", "path": "~step", "value": list(messages)},
            {"idx": 1, "channel": "extra", "path": "~step", "value": extra},
        ]
    }


def outcome(encode: Any, row: Any) -> Any:
    """The bytes ``encode`` writes for ``row``, or its error's type, path and message."""
    try:
        return encode(row)
    except SerializationError as exc:
        return (type(exc), exc.path, str(exc))


def same_as_plain(s: ReusingSerializer, row: Any) -> None:
    expected = outcome(lambda r: PLAIN.dumps(r, path="checkpoint"), row)
    assert outcome(lambda r: s.dumps(r, path="checkpoint"), row) == expected
    assert outcome(lambda r: s.dumps_many([(r, "checkpoint")])[0], row) == expected


# Values that keep a record off the one-pass path, each with what it must still become.
OFF_THE_PATH = {
    "lone surrogate": "caf\udce9",
    "lone surrogate in a key": {"\ud800": 1},
    "int past 4300 digits": 10**5000,
    "int key": {1: "one"},
    "tuple key": {(1, 2): "pair"},
    "NaN": float("nan"),
    "infinity": float("-inf"),
    "tuple": (1, 2),
    "dataclass": Point(1, 2),
    "set": {"a", "b"},
    "bytes": b"\x00\xff",
    "a tag-like key": {"__fc__": "looks like a tag", "v": 1},
    "nested too deep": nested(MAX_NESTING + 20),
}


@pytest.mark.parametrize("extra", OFF_THE_PATH.values(), ids=OFF_THE_PATH.keys())
@pytest.mark.parametrize("shape", [checkpoint_row, write_row], ids=["checkpoint", "write"])
def test_what_is_not_plain_json_gets_the_old_bytes_or_the_old_error(shape: Any, extra: Any) -> None:
    s = ReusingSerializer(JsonSerializer())
    row = shape(extra, AIMessage("hello", id="m1"))
    assert s._in_one_pass(row, None) is None
    for _ in range(2):  # the message encoded, then reused
        same_as_plain(s, row)


def test_a_plain_record_with_messages_takes_the_one_pass_path() -> None:
    s = ReusingSerializer(JsonSerializer())
    messages = [AIMessage("hello", id="m1"), HumanMessage('héllo\n"quoted"', id="m2")]
    for row in (checkpoint_row(None, *messages), write_row([1.5, {"k": []}], *messages)):
        data = s._in_one_pass(row, None)
        assert data == PLAIN.dumps(row)
        assert s.loads(data) == PLAIN.loads(PLAIN.dumps(row))


def test_nesting_near_the_limit_is_refused_exactly_where_it_was() -> None:
    s = ReusingSerializer(JsonSerializer())
    refused = set()
    for depth in range(MAX_NESTING - 5, MAX_NESTING + 15):
        for shape in (checkpoint_row, write_row):
            row = shape(nested(depth), AIMessage("m", id="1"))
            same_as_plain(s, row)
            refused.add(isinstance(outcome(PLAIN.dumps, row), tuple))
    assert refused == {True, False}  # the range crosses the limit


def test_a_message_deeper_than_the_splice_depth_is_encoded_in_place() -> None:
    s = ReusingSerializer(JsonSerializer())
    deep: Any = AIMessage("deep down", id="1")
    for _ in range(SPLICE_DEPTH):
        deep = [deep]
    row = {"writes": [deep]}  # the message sits SPLICE_DEPTH + 2 containers deep
    assert s._in_one_pass(row, None) is None
    same_as_plain(s, row)


def test_a_langchain_message_is_encoded_as_the_plain_serializer_encodes_it() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    s = ReusingSerializer(JsonSerializer())
    row = write_row(None, messages.AIMessage("from langchain", id="lc1"))
    assert s._in_one_pass(row, None) is None
    same_as_plain(s, row)


def test_a_string_starting_with_the_token_is_encoded_plainly() -> None:
    s = ReusingSerializer(JsonSerializer())
    for text in (s._token, f"{s._token}0", f"{s._token}{id(s)}"):
        for extra in (text, {text: 1}):
            row = checkpoint_row(extra, AIMessage("m", id="1"))
            assert s._in_one_pass(row, None) is None  # a placeholder too many
            same_as_plain(s, row)
    # Anywhere else in a string: still what the plain serializer writes.
    row = checkpoint_row(f'x "{s._token}0 y', AIMessage("m", id="1"))
    same_as_plain(s, row)


@pytest.fixture
def reads_per_message(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often the serializer read each message's content (by id) to find its bytes."""
    counts: Counter[str] = Counter()
    original = ReusingSerializer._fragment

    def counting(self: ReusingSerializer, message: Any) -> bytes | None:
        counts[message.id] += 1
        return original(self, message)

    monkeypatch.setattr(ReusingSerializer, "_fragment", counting)
    return counts


def test_dumps_many_reads_each_message_once_per_call(reads_per_message: Counter[str]) -> None:
    s = ReusingSerializer(JsonSerializer())
    first, second = AIMessage("first", id="a"), AIMessage("second", id="b")
    batch = [
        (write_row(None, first), "write"),
        (checkpoint_row(None, first), "checkpoint"),
        (write_row(None, second), "write"),
        (checkpoint_row([first, second], first, second), "checkpoint"),
    ]
    assert s.dumps_many(batch) == [PLAIN.dumps(value, path=path) for value, path in batch]
    assert reads_per_message == {"a": 1, "b": 1}


def test_a_message_changed_between_two_batches_is_stored_with_its_new_content() -> None:
    s = ReusingSerializer(JsonSerializer())
    message = AIMessage("draft", id="m", additional_kwargs={"n": 1})
    batch = [(write_row(None, message), "write"), (checkpoint_row(None, message), "checkpoint")]
    before = s.dumps_many(batch)
    message.additional_kwargs["n"] = 1.0  # equal by ==, stored differently
    after = s.dumps_many(batch)
    assert after == [PLAIN.dumps(value, path=path) for value, path in batch]
    assert after != before


def test_dumps_many_raises_what_dumps_raises() -> None:
    s = ReusingSerializer(JsonSerializer())
    good = (write_row(None, AIMessage("ok", id="1")), "write of node 'a'")
    bad = (write_row(object(), AIMessage("ok", id="1")), "write of node 'b'")
    with pytest.raises(SerializationError) as many:
        s.dumps_many([good, bad])
    with pytest.raises(SerializationError) as one:
        PLAIN.dumps(bad[0], path=bad[1])
    assert (many.value.path, str(many.value)) == (one.value.path, str(one.value))


json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(),
    st.tuples(st.integers()),
    st.builds(lambda: AIMessage("leaf", id="leaf")),
)
records = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.one_of(st.text(), st.integers()), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(records)
def test_any_record_is_written_as_the_plain_serializer_writes_it(extra: Any) -> None:
    s = ReusingSerializer(JsonSerializer())
    for shape in (checkpoint_row, write_row):
        same_as_plain(s, shape(extra, AIMessage("hello", id="m1")))
