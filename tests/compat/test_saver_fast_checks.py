"""Spec: the fast checks behind tails and add_messages give the answers of the slow ones.

A saver stores a list as a tail only after proving that the list still
starts with exactly what it stored. For a list of messages (pydantic models)
or of immutable scalars the proof is a few list comparisons run in C (a
:class:`~flowcore.compat.langgraph._savers_layout.Bulk`), not one Python
``==`` per item; ``add_messages`` appends new ids without a Python loop
over the old messages. These specs pin that the fast paths are taken, that
every change made in place to a stored message is still seen (the list is
stored whole and reads back as changed), and that ``add_messages`` still
merges exactly as LangGraph's does.
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, PrivateAttr

from flowcore.compat.langgraph import AIMessage, HumanMessage, ToolMessage, add_messages
from flowcore.compat.langgraph import _savers_layout as layout

from .conftest import Saver, stored
from .test_messages import OURS, _langgraph_side, _normalized
from .test_saver_tails import Recorder, how_stored


class Question(HumanMessage):
    """A HumanMessage by another class name: equal fields, stored as another class."""


def chat(n: int) -> list[Any]:
    """``n`` messages of the kinds a chat holds, merged by add_messages."""
    messages: list[Any] = []
    for i in range(n):
        if i % 3 == 0:
            new: Any = HumanMessage(f"question {i}", id=f"h{i}")
        elif i % 3 == 1:
            new = AIMessage(
                [{"type": "text", "text": f"answer {i}"}],
                tool_calls=[{"name": "search", "args": {"q": [f"q{i}"]}, "id": f"c{i}"}],
                response_metadata={"usage": {"tokens": i}},
                custom_field={"kept": ["as", "extra"]},
                id=f"a{i}",
            )
        else:
            new = ToolMessage(f"result {i}", tool_call_id=f"c{i - 1}", id=f"t{i}")
        messages = add_messages(messages, [new])
    return messages


# ---------------------------------------------------------------------- the bulk check


def test_a_growing_chat_is_checked_in_bulk_and_stored_in_tails() -> None:
    messages: list[Any] = []
    shadow = None
    kinds = []
    for i in range(40):
        messages = add_messages(messages, [AIMessage(f"message {i}")])
        tail, _, shadow = layout.stored_list(messages, shadow, f"c{i}")
        assert shadow is not None
        assert shadow.bulk is not None
        assert shadow.bulk.how == layout._MODEL
        assert len(shadow.bulk.types) == len(messages)
        kinds.append("whole" if tail is None else "tail")
    assert kinds.count("tail") > kinds.count("whole")


def test_a_list_of_scalars_is_checked_in_bulk_too() -> None:
    _, _, shadow = layout.stored_list(["a", 1, True, None, b"x"], None, "c1")
    assert shadow is not None
    assert shadow.bulk is not None
    assert shadow.bulk.how == layout._SAME
    tail, _, after = layout.stored_list(["a", 1, True, None, b"x", "new"], shadow, "c2")
    assert tail == ["new"]
    assert after is not None
    assert after.bulk is not None
    assert len(after.bulk.types) == 6


def test_a_mixed_list_has_no_bulk_form_and_is_checked_item_by_item() -> None:
    xs: list[Any] = ["a", HumanMessage("b", id="1"), 1.5, {"k": [1]}]
    _, _, shadow = layout.stored_list(xs, None, "c1")
    assert shadow is not None
    assert shadow.bulk is None
    tail, _, _ = layout.stored_list([*xs, "more"], shadow, "c2")
    assert tail == ["more"]
    xs[3]["k"].append(2)
    assert layout.stored_list([*xs, "more"], shadow, "c2")[0] is None


def test_the_bulk_check_needs_the_whole_stored_prefix_and_ignores_items_after_it() -> None:
    messages = chat(4)
    witnesses = layout._witnesses(messages)
    assert witnesses is not None
    bulk = layout._bulk(witnesses)
    assert bulk is not None
    assert layout._bulk_matches([*messages, HumanMessage("later", id="later")], bulk)
    assert not layout._bulk_matches(messages[:3], bulk)  # shorter: some stored item is gone
    assert not layout._bulk_matches([], bulk)
    scalars = ["a", 1, None]
    same = layout._bulk(layout._witnesses(scalars) or [])
    assert same is not None
    assert layout._bulk_matches([*scalars, "more"], same)
    assert not layout._bulk_matches(scalars[:2], same)


def _message_mutations() -> dict[str, Callable[[list[Any]], None]]:
    def set_class(ms: list[Any]) -> None:
        object.__setattr__(ms[0], "__class__", Question)  # same fields, another class

    def set_extra(ms: list[Any]) -> None:
        ms[1].__pydantic_extra__["custom_field"]["kept"].append("changed")

    return {
        "content reassigned": lambda ms: setattr(ms[0], "content", "edited"),
        "content block changed inside": lambda ms: ms[1].content[0].update(text="edited"),
        "tool call args changed inside": lambda ms: ms[1].tool_calls[0]["args"]["q"].append("x"),
        "additional_kwargs gained a key": lambda ms: ms[2].additional_kwargs.update(k="v"),
        "response_metadata changed inside": lambda ms: (
            ms[1].response_metadata["usage"].update(tokens=99)
        ),
        "extra field changed inside": set_extra,
        "name set": lambda ms: setattr(ms[2], "name", "tool"),
        "id reassigned": lambda ms: setattr(ms[0], "id", "other"),
        "class reassigned": set_class,
        "int field becomes an equal float": lambda ms: (
            ms[1].response_metadata["usage"].update(tokens=1.0)
        ),
    }


@pytest.mark.parametrize("change", list(_message_mutations()))
def test_every_change_in_place_to_a_stored_message_fails_both_checks(change: str) -> None:
    messages = chat(3)
    witnesses = layout._witnesses(messages)
    assert witnesses is not None
    bulk = layout._bulk(witnesses)
    assert bulk is not None
    assert layout._bulk_matches(messages, bulk)
    _message_mutations()[change](messages)
    if change == "int field becomes an equal float":
        # 1 == 1.0: equal by pydantic's ==, so both checks keep it (the documented exception).
        assert layout._bulk_matches(messages, bulk)
        assert all(map(layout._matches, messages, witnesses))
        return
    assert not layout._bulk_matches(messages, bulk)
    assert not all(map(layout._matches, messages, witnesses))


@pytest.mark.parametrize(
    "change", [c for c in _message_mutations() if c != "int field becomes an equal float"]
)
async def test_a_message_changed_in_place_is_stored_whole_and_reads_back_changed(
    saver: Saver, change: str
) -> None:
    rec = Recorder(saver)
    messages = chat(6)
    await rec.put({"messages": messages})
    messages = add_messages(messages, [AIMessage("appended", id="n1")])
    await rec.put({"messages": messages})
    # The same message objects the saver witnessed, one changed in place, plus a new one.
    _message_mutations()[change](messages)
    messages = add_messages(messages, [AIMessage("appended again", id="n2")])
    changed = await rec.put({"messages": messages})
    messages = add_messages(messages, [AIMessage("and again", id="n3")])
    await rec.put({"messages": messages})
    assert [how_stored(s, "messages") for s in await stored(saver)] == [
        "whole",
        "tail",
        "whole",
        "tail",
    ]
    await rec.check()
    got = await saver.aget_tuple(
        {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": changed}}
    )
    assert got is not None
    read = got.checkpoint["channel_values"]["messages"]
    assert read == rec.saved[changed]["messages"]
    assert [type(m) for m in read] == [type(m) for m in rec.saved[changed]["messages"]]


async def test_a_message_replaced_by_an_equal_copy_still_extends_the_list(saver: Saver) -> None:
    rec = Recorder(saver)
    messages = chat(4)
    await rec.put({"messages": messages})
    copies = [copy.deepcopy(m) for m in messages]
    await rec.put({"messages": add_messages(copies, [HumanMessage("next", id="n")])})
    assert [how_stored(s, "messages") for s in await stored(saver)] == ["whole", "tail"]
    await rec.check()


class Custom(BaseModel):
    xs: list[int]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Custom) and self.xs == other.xs


class WithPrivate(BaseModel):
    xs: list[int]
    _seen: int = PrivateAttr(default=0)


class WithCachedTotal(BaseModel):
    xs: list[int]

    @functools.cached_property
    def total(self) -> int:
        return sum(self.xs)


@pytest.mark.parametrize("model", [Custom, WithPrivate])
async def test_models_pydantics_eq_does_not_decide_are_copied_whole_and_still_checked(
    saver: Saver, model: type[BaseModel]
) -> None:
    items: list[Any] = [model(xs=[1]), model(xs=[2])]
    witnesses = layout._witnesses(items)
    assert witnesses is not None
    assert {w[0] for w in witnesses} == {layout._COPY}
    rec = Recorder(saver)
    await rec.put({"xs": items})
    items = [*items, model(xs=[3])]
    await rec.put({"xs": items})
    items[0].xs.append(9)  # type: ignore[attr-defined]
    items = [*items, model(xs=[4])]
    await rec.put({"xs": items})
    assert [how_stored(s, "xs") for s in await stored(saver)] == ["whole", "tail", "whole"]
    await rec.check()


async def test_a_cached_property_computed_after_storing_costs_a_whole_copy_not_a_wrong_value(
    saver: Saver,
) -> None:
    items = [WithCachedTotal(xs=[1, 2]), WithCachedTotal(xs=[3])]
    rec = Recorder(saver)
    await rec.put({"xs": items})
    assert items[0].total == 3  # now in the item's __dict__, beside its fields
    items = [*items, WithCachedTotal(xs=[4])]
    await rec.put({"xs": items})
    items = [*items, WithCachedTotal(xs=[5])]
    await rec.put({"xs": items})
    assert [how_stored(s, "xs") for s in await stored(saver)] == ["whole", "whole", "tail"]
    await rec.check()


# ---------------------------------------------------------------------- add_messages


def _random_updates(seed: int, side: Any) -> list[Any]:
    """The merged lists of twelve random add_messages calls on ``side``, from one seed."""
    rng = random.Random(seed)
    merged: list[Any] = []
    out = []
    fresh = iter(range(10_000))
    for _ in range(12):
        known = [m.id for m in merged]
        right: list[Any] = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            pick = rng.random()
            if pick < 0.4:
                right.append(side.AIMessage(f"new {next(fresh)}", id=f"m{next(fresh)}"))
            elif pick < 0.5:
                right.append(side.HumanMessage(f"no id {next(fresh)}"))
            elif pick < 0.6:
                right.append(("user", f"pair {next(fresh)}"))
            elif pick < 0.7 and known:
                right.append(side.HumanMessage("replaced", id=rng.choice(known)))
            elif pick < 0.8 and known:
                right.append(side.RemoveMessage(id=rng.choice(known)))
            elif pick < 0.9 and (ids := [getattr(m, "id", None) for m in right if m]) and ids[-1]:
                right.append(side.AIMessage("same id twice", id=ids[-1]))
            else:
                right.append(side.AIMessage("repeat", id="fixed"))
        left: list[Any] = list(merged)
        if rng.random() < 0.2:
            left.append(side.HumanMessage("left without an id"))
        if rng.random() < 0.1:
            left.append({"role": "assistant", "content": "a dict on the left"})
        before = list(left)
        try:
            merged = side.add_messages(left, right)
        except ValueError as exc:
            out.append(("ValueError", str(exc).split(". ")[0]))
            continue
        assert left == before  # the left list itself is never changed
        out.append([_normalized(m) for m in merged])
    return out


@pytest.mark.parametrize("seed", range(40))
def test_add_messages_merges_random_updates_as_langgraph_does(seed: int) -> None:
    assert _random_updates(seed, OURS) == _random_updates(seed, _langgraph_side())


def test_an_append_returns_a_new_list_of_the_same_message_objects() -> None:
    left = chat(5)
    new = AIMessage("next")
    merged = add_messages(left, [new])
    assert merged is not left
    assert len(left) == 5
    assert all(a is b for a, b in zip(merged, [*left, new], strict=True))
    assert new.id is not None
