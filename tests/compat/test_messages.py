"""Spec: LangChain-shaped messages and LangGraph's add_messages reducer, without langchain.

Messages are built with LangChain's constructor shapes, compare like pydantic
models, round-trip through flowcore's checkpoint serializer, and merge with
add_messages exactly as LangGraph merges them (checked side by side with
langgraph itself when it is installed).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import pytest
from pydantic import TypeAdapter, ValidationError

from flowcore.checkpoint.serde import JsonSerializer
from flowcore.compat import langgraph as ours
from flowcore.compat.langgraph import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    MessagesState,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    add_messages,
    convert_to_messages,
    message_to_dict,
    messages_from_dict,
    messages_to_dict,
)


def _is_uuid4(value: object) -> bool:
    try:
        return isinstance(value, str) and uuid.UUID(value).version == 4
    except ValueError:
        return False


# --- constructing messages --------------------------------------------------------------


def test_each_message_class_has_its_type_and_takes_content_positionally_or_by_keyword() -> None:
    assert HumanMessage("hi").type == "human"
    assert SystemMessage("be brief").type == "system"
    assert AIMessage("hello").type == "ai"
    assert ToolMessage("42", tool_call_id="c1").type == "tool"
    assert RemoveMessage(id="1").type == "remove"
    assert HumanMessage("hi", id="1") == HumanMessage(content="hi", id="1")


def test_a_message_has_langchains_fields_with_their_defaults() -> None:
    message = HumanMessage("hi")

    assert message.content == "hi"
    assert message.id is None
    assert message.name is None
    assert message.additional_kwargs == {}
    assert message.response_metadata == {}


def test_content_may_be_a_list_of_content_blocks_and_text_joins_the_text_parts() -> None:
    message = HumanMessage(["look: ", {"type": "text", "text": "a cat"}, {"type": "image_url"}])

    assert message.content[1] == {"type": "text", "text": "a cat"}
    assert message.text == "look: a cat"


def test_messages_are_equal_only_with_the_same_class_and_fields() -> None:
    assert HumanMessage("a", id="1") == HumanMessage("a", id="1")
    assert HumanMessage("a", id="1") != HumanMessage("a", id="2")
    assert HumanMessage("a") != AIMessage("a")


def test_numeric_ids_become_strings_and_unknown_keywords_are_kept_as_fields() -> None:
    message = HumanMessage("hi", id=7, mood="cheerful")

    assert message.id == "7"
    assert message.model_dump()["mood"] == "cheerful"


def test_a_message_without_content_is_refused() -> None:
    with pytest.raises(ValidationError):
        HumanMessage()


def test_ai_tool_calls_get_type_tool_call_filled_in() -> None:
    message = AIMessage("", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}])

    assert message.tool_calls == [
        {"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}
    ]
    assert message.invalid_tool_calls == []
    assert message.usage_metadata is None


def test_a_tool_call_without_an_id_is_refused_with_the_missing_key_named() -> None:
    with pytest.raises(ValidationError, match="lacks id"):
        AIMessage("", tool_calls=[{"name": "search", "args": {}}])


def test_openai_style_raw_tool_calls_in_additional_kwargs_are_parsed() -> None:
    raw = [
        {"id": "c1", "function": {"name": "search", "arguments": '{"q": "x"}'}},
        {"id": "c2", "function": {"name": "broken", "arguments": "{not json"}},
    ]
    message = AIMessage("", additional_kwargs={"tool_calls": raw})

    assert message.tool_calls == [
        {"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}
    ]
    assert message.invalid_tool_calls == [
        {
            "name": "broken",
            "args": "{not json",
            "id": "c2",
            "error": None,
            "type": "invalid_tool_call",
        }
    ]


def test_usage_metadata_is_kept_on_ai_messages() -> None:
    usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}

    assert AIMessage("ok", usage_metadata=usage).usage_metadata == usage


def test_tool_messages_link_to_their_call_and_default_to_success() -> None:
    message = ToolMessage("result", tool_call_id="c1")

    assert message.tool_call_id == "c1"
    assert message.status == "success"
    assert message.artifact is None
    assert ToolMessage("boom", tool_call_id="c1", status="error").status == "error"


def test_tool_message_content_that_is_not_text_becomes_text() -> None:
    assert ToolMessage(42, tool_call_id="c1").content == "42"
    assert ToolMessage(("a", 1), tool_call_id="c1").content == ["a", "1"]
    assert ToolMessage("x", tool_call_id=5).tool_call_id == "5"


def test_a_tool_message_needs_a_tool_call_id_and_a_known_status() -> None:
    with pytest.raises(ValidationError):
        ToolMessage("result")
    with pytest.raises(ValidationError):
        ToolMessage("result", tool_call_id="c1", status="maybe")


def test_remove_message_takes_only_an_id() -> None:
    assert RemoveMessage(id="m1").content == ""
    assert RemoveMessage("m1").id == "m1"
    with pytest.raises(ValueError, match="does not support 'content'"):
        RemoveMessage(id="m1", content="x")


def test_repr_leaves_out_optional_fields_at_their_defaults_like_langchain() -> None:
    assert repr(HumanMessage("hi", id="1")) == (
        "HumanMessage(content='hi', additional_kwargs={}, response_metadata={}, id='1')"
    )
    assert (
        repr(ToolMessage("r", tool_call_id="c1")) == "ToolMessage(content='r', tool_call_id='c1')"
    )


def test_pretty_repr_titles_the_message_and_lists_tool_calls() -> None:
    message = AIMessage(
        "Checking.", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}]
    )

    lines = message.pretty_repr().splitlines()

    assert lines[0] == "=" * 34 + " Ai Message " + "=" * 34
    assert len(lines[0]) == 80
    assert lines[1:] == [
        "",
        "Checking.",
        "Tool Calls:",
        "  search (c1)",
        " Call ID: c1",
        "  Args:",
        "    q: x",
    ]
    assert ToolMessage("r", tool_call_id="c1", name="search").pretty_repr().splitlines()[1] == (
        "Name: search"
    )


def test_pretty_print_prints_the_pretty_repr(capsys: pytest.CaptureFixture[str]) -> None:
    message = HumanMessage("Hello")

    message.pretty_print()

    assert capsys.readouterr().out == message.pretty_repr() + "\n"


# --- coercion -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "cls"),
    [
        ("hi", HumanMessage),
        (("user", "hi"), HumanMessage),
        (("human", "hi"), HumanMessage),
        (("assistant", "hi"), AIMessage),
        (("ai", "hi"), AIMessage),
        (("system", "hi"), SystemMessage),
        ({"role": "user", "content": "hi"}, HumanMessage),
        ({"role": "assistant", "content": "hi"}, AIMessage),
        ({"type": "ai", "content": "hi"}, AIMessage),
        ({"role": "system", "content": "hi"}, SystemMessage),
        ({"role": "developer", "content": "hi"}, SystemMessage),
        ({"role": "tool", "content": "hi", "tool_call_id": "c1"}, ToolMessage),
    ],
)
def test_strings_pairs_and_role_dicts_become_messages(given: Any, cls: type[BaseMessage]) -> None:
    [message] = convert_to_messages([given])

    assert type(message) is cls
    assert message.content == "hi"


def test_dict_fields_are_kept_and_unknown_keys_go_to_additional_kwargs() -> None:
    [tool, ai, dev] = convert_to_messages(
        [
            {
                "role": "tool",
                "content": "r",
                "tool_call_id": "c1",
                "name": "search",
                "id": "t1",
                "status": "error",
                "artifact": [1],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "function": {"name": "search", "arguments": '{"q": 1}'}}
                ],
                "trace": "abc",
                "response_metadata": {"model": "m"},
            },
            {"role": "developer", "content": "rules"},
        ]
    )

    assert tool == ToolMessage(
        "r", tool_call_id="c1", name="search", id="t1", status="error", artifact=[1]
    )
    assert ai.content == ""
    assert isinstance(ai, AIMessage)
    assert ai.tool_calls == [{"name": "search", "args": {"q": 1}, "id": "c1", "type": "tool_call"}]
    assert ai.additional_kwargs == {"trace": "abc"}
    assert ai.response_metadata == {"model": "m"}
    assert dev.additional_kwargs == {"__openai_role__": "developer"}


def test_langchains_serialized_constructor_envelope_is_read() -> None:
    envelope = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {"content": "hi", "id": "a1"},
    }

    assert convert_to_messages([envelope]) == [AIMessage("hi", id="a1")]


def test_coercion_failures_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="Unexpected message type: 'robot'"):
        convert_to_messages([("robot", "hi")])
    with pytest.raises(ValueError, match="must contain 'role' and 'content' keys"):
        convert_to_messages([{"content": "hi"}])
    with pytest.raises(NotImplementedError, match=r"\(role string, template\)"):
        convert_to_messages([("user", "hi", "extra")])
    with pytest.raises(NotImplementedError, match="Unsupported message type"):
        convert_to_messages([42])  # type: ignore[list-item]


# --- add_messages -------------------------------------------------------------------------


def test_new_messages_are_appended_in_order() -> None:
    merged = add_messages(
        [HumanMessage("a", id="1")], [AIMessage("b", id="2"), HumanMessage("c", id="3")]
    )

    assert [m.id for m in merged] == ["1", "2", "3"]


def test_either_side_may_be_a_single_message_or_message_like_value() -> None:
    merged = add_messages(HumanMessage("a", id="1"), ("assistant", "b"))

    assert [(m.type, m.content) for m in merged] == [("human", "a"), ("ai", "b")]


def test_messages_without_an_id_get_a_fresh_uuid4_on_both_sides() -> None:
    left = [HumanMessage("a")]
    merged = add_messages(left, ["b", "c"])

    ids = [m.id for m in merged]
    assert all(_is_uuid4(i) for i in ids)
    assert len(set(ids)) == 3
    assert left[0].id == ids[0]


def test_a_message_with_a_known_id_replaces_the_old_one_in_place() -> None:
    left = [HumanMessage("a", id="1"), AIMessage("b", id="2")]

    merged = add_messages(left, [HumanMessage("a, edited", id="1"), AIMessage("c", id="3")])

    assert [(m.id, m.content) for m in merged] == [("1", "a, edited"), ("2", "b"), ("3", "c")]
    assert left[0].content == "a"


def test_remove_message_deletes_by_id() -> None:
    merged = add_messages(
        [HumanMessage("a", id="1"), AIMessage("b", id="2")], [RemoveMessage(id="1")]
    )

    assert merged == [AIMessage("b", id="2")]


def test_removing_an_unknown_id_is_a_value_error_naming_the_id() -> None:
    with pytest.raises(ValueError, match=r"delete a message with an ID that doesn't exist \('9'\)"):
        add_messages([HumanMessage("a", id="1")], [RemoveMessage(id="9")])


def test_a_message_removed_and_sent_again_in_one_update_stays_with_the_new_value() -> None:
    merged = add_messages(
        [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        [RemoveMessage(id="1"), HumanMessage("a2", id="1")],
    )

    assert [(m.id, m.content) for m in merged] == [("1", "a2"), ("2", "b")]


def test_a_message_added_and_removed_in_one_update_is_gone() -> None:
    merged = add_messages(
        [HumanMessage("a", id="1")], [AIMessage("b", id="2"), RemoveMessage(id="2")]
    )

    assert [m.id for m in merged] == ["1"]


def test_remove_all_clears_everything_before_it_and_keeps_what_follows() -> None:
    merged = add_messages(
        [HumanMessage("a", id="1")],
        [
            AIMessage("dropped", id="2"),
            RemoveMessage(id=REMOVE_ALL_MESSAGES),
            HumanMessage("fresh", id="3"),
        ],
    )

    assert merged == [HumanMessage("fresh", id="3")]
    assert REMOVE_ALL_MESSAGES == "__remove_all__"


def test_called_without_sides_it_returns_a_reducer_and_with_one_side_it_refuses() -> None:
    reducer = add_messages(format=None)

    assert [m.content for m in reducer(["a"], ["b"])] == ["a", "b"]
    with pytest.raises(ValueError, match="Only received: 'left'"):
        add_messages([HumanMessage("a")], None)  # type: ignore[call-overload]


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="Unrecognized format='xml'"):
        add_messages(["a"], ["b"], format="xml")  # type: ignore[call-overload]


def test_openai_format_rewrites_content_blocks_the_way_langgraph_does() -> None:
    merged = add_messages(
        [],
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "see", "cache_control": {"type": "ephemeral"}},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "AAA"},
                    },
                ],
            },
            HumanMessage(["a", "b"], id="h"),
            AIMessage("", tool_calls=[{"name": "s", "args": {}, "id": "c1"}], name="bot", id="x"),
        ],
        format="langchain-openai",
    )

    assert merged[0].content == [
        {"type": "text", "text": "see"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
    ]
    assert merged[1] == HumanMessage("a\nb")
    assert merged[2] == AIMessage(
        "", tool_calls=[{"name": "s", "args": {}, "id": "c1"}], name="bot"
    )


def test_messages_state_declares_messages_merged_by_add_messages() -> None:
    hint = get_type_hints(MessagesState, include_extras=True)["messages"]

    assert get_origin(hint) is Annotated
    list_type, reducer = get_args(hint)
    assert reducer is add_messages
    assert get_args(list_type)[0] is AnyMessage


def test_any_message_validates_dicts_into_the_class_named_by_type() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(list[AnyMessage])

    loaded = adapter.validate_python(
        [{"type": "human", "content": "a"}, {"type": "tool", "content": "r", "tool_call_id": "c1"}]
    )

    assert [type(m) for m in loaded] == [HumanMessage, ToolMessage]


def test_message_dicts_round_trip() -> None:
    messages = [
        HumanMessage("a", id="1"),
        AIMessage("", tool_calls=[{"name": "s", "args": {"q": 1}, "id": "c1"}]),
        ToolMessage("r", tool_call_id="c1", status="error"),
        SystemMessage("s", name="rules"),
        RemoveMessage(id="1"),
    ]

    assert message_to_dict(messages[0])["type"] == "human"
    assert messages_from_dict(messages_to_dict(messages)) == messages
    with pytest.raises(ValueError, match="unexpected message type: 'chat'"):
        messages_from_dict([{"type": "chat", "data": {"content": "x"}}])


def test_messages_round_trip_through_the_checkpoint_serializer() -> None:
    serializer = JsonSerializer()
    state = {
        "messages": [
            HumanMessage(["hi", {"type": "text", "text": "there"}], id="h1", name="ann", mood="ok"),
            AIMessage(
                "",
                id="a1",
                tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}],
                usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
                response_metadata={"model": "m"},
            ),
            ToolMessage("r", tool_call_id="c1", status="error", artifact={"raw": [1, 2]}),
            SystemMessage("s"),
            RemoveMessage(id="h1"),
        ]
    }

    restored = serializer.loads(serializer.dumps(state))

    assert restored == state
    assert [type(m) for m in restored["messages"]] == [type(m) for m in state["messages"]]


def test_the_public_module_exports_the_message_names() -> None:
    for name in (
        "AIMessage",
        "HumanMessage",
        "add_messages",
        "MessagesState",
        "REMOVE_ALL_MESSAGES",
    ):
        assert name in ours.__all__


# --- side by side with LangGraph ----------------------------------------------------------

Case = Callable[[SimpleNamespace], tuple[Any, Any]]

CASES: dict[str, Case] = {
    "append": lambda m: ([m.HumanMessage("a", id="1")], [m.AIMessage("b", id="2")]),
    "single values": lambda m: (m.HumanMessage("a", id="1"), m.AIMessage("b", id="2")),
    "strings and pairs": lambda m: (["hello"], [("assistant", "hi"), ("user", "bye"), "more"]),
    "role dicts": lambda m: (
        [],
        [
            {"role": "user", "content": "q", "id": "u1", "name": "ann"},
            {"role": "assistant", "content": "a", "extra": 1},
            {"type": "system", "content": "s"},
            {"role": "tool", "content": "r", "tool_call_id": "c1", "status": "error"},
            {"role": "developer", "content": "d"},
        ],
    ),
    "openai tool calls in a dict": lambda m: (
        [],
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"x": 1}'}}],
            }
        ],
    ),
    "replace in place": lambda m: (
        [m.HumanMessage("a", id="1"), m.AIMessage("b", id="2")],
        [m.HumanMessage("a2", id="1"), m.AIMessage("c", id="3")],
    ),
    "remove": lambda m: (
        [m.HumanMessage("a", id="1"), m.AIMessage("b", id="2")],
        [m.RemoveMessage(id="2")],
    ),
    "remove then re-add": lambda m: (
        [m.HumanMessage("a", id="1"), m.AIMessage("b", id="2")],
        [m.RemoveMessage(id="1"), m.HumanMessage("a2", id="1")],
    ),
    "add then remove": lambda m: (
        [m.HumanMessage("a", id="1")],
        [m.AIMessage("b", id="2"), m.RemoveMessage(id="2")],
    ),
    "duplicate ids on the right": lambda m: (
        [],
        [m.HumanMessage("a", id="1"), m.HumanMessage("b", id="1")],
    ),
    "remove unknown": lambda m: ([m.HumanMessage("a", id="1")], [m.RemoveMessage(id="9")]),
    "remove all": lambda m: (
        [m.HumanMessage("a", id="1")],
        [m.AIMessage("x", id="2"), m.RemoveMessage(id=m.REMOVE_ALL), m.HumanMessage("n", id="3")],
    ),
    "remove all twice": lambda m: (
        [m.HumanMessage("a", id="1")],
        [
            m.RemoveMessage(id=m.REMOVE_ALL),
            m.HumanMessage("n", id="3"),
            m.RemoveMessage(id=m.REMOVE_ALL),
            m.HumanMessage("o", id="4"),
        ],
    ),
    "tool calls and tool messages": lambda m: (
        [m.HumanMessage("q", id="1")],
        [
            m.AIMessage("", id="2", tool_calls=[{"name": "s", "args": {"q": "x"}, "id": "c1"}]),
            m.ToolMessage("r", tool_call_id="c1", id="3", name="s"),
        ],
    ),
    "content blocks": lambda m: (
        [],
        [m.HumanMessage(["a", {"type": "text", "text": "b"}], id="1")],
    ),
    "unknown role": lambda m: ([], [("robot", "x")]),
    "dict without content": lambda m: ([], [{"role": "user"}]),
    "bad pair": lambda m: ([], [("user", "x", "y")]),
    "only left": lambda m: (["a"], None),
    "openai format": lambda m: (
        [m.HumanMessage(["a", "b"], id="1")],
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}},
                    {"type": "image", "url": "https://x/y.png"},
                    {"type": "image_url", "image_url": {"url": "https://a", "detail": "low"}},
                    {"type": "custom", "x": 1},
                ],
            },
            m.AIMessage("ok", name="bot", id="2"),
            m.ToolMessage("r", tool_call_id="c1", status="error"),
        ],
    ),
}
FORMATTED = {"openai format"}


def _langgraph_side() -> SimpleNamespace:
    pytest.importorskip("langgraph")
    from langchain_core import messages as lc
    from langgraph.graph.message import REMOVE_ALL_MESSAGES as lg_remove_all
    from langgraph.graph.message import add_messages as lg_add_messages

    return SimpleNamespace(
        HumanMessage=lc.HumanMessage,
        AIMessage=lc.AIMessage,
        SystemMessage=lc.SystemMessage,
        ToolMessage=lc.ToolMessage,
        RemoveMessage=lc.RemoveMessage,
        REMOVE_ALL=lg_remove_all,
        add_messages=lg_add_messages,
    )


OURS = SimpleNamespace(
    HumanMessage=HumanMessage,
    AIMessage=AIMessage,
    SystemMessage=SystemMessage,
    ToolMessage=ToolMessage,
    RemoveMessage=RemoveMessage,
    REMOVE_ALL=REMOVE_ALL_MESSAGES,
    add_messages=add_messages,
)


def _normalized(message: Any) -> dict[str, Any]:
    return {
        "class": type(message).__name__,
        "type": message.type,
        "content": message.content,
        "id": "<uuid4>" if _is_uuid4(message.id) else message.id,
        "name": message.name,
        "additional_kwargs": message.additional_kwargs,
        "tool_calls": getattr(message, "tool_calls", None),
        "invalid_tool_calls": getattr(message, "invalid_tool_calls", None),
        "tool_call_id": getattr(message, "tool_call_id", None),
        "status": getattr(message, "status", None),
    }


def _outcome(side: SimpleNamespace, case: Case, formatted: bool) -> Any:
    left, right = case(side)
    try:
        if formatted:
            merged = side.add_messages(left, right, format="langchain-openai")
        else:
            merged = side.add_messages(left, right)
    except Exception as exc:
        # Compare the first sentence: LangChain appends a troubleshooting link, and
        # its list of roles names "function", which we deliberately do not support.
        return (type(exc).__name__, str(exc).splitlines()[0].split(". ")[0])
    return [_normalized(m) for m in merged]


@pytest.mark.parametrize("name", sorted(CASES))
def test_add_messages_matches_langgraph(name: str) -> None:
    theirs = _langgraph_side()
    case = CASES[name]
    formatted = name in FORMATTED

    assert _outcome(OURS, case, formatted) == _outcome(theirs, case, formatted)
