"""Spec: a thread refuses input, answers and updates its checkpoints could not hold.

Before, such a value failed the run at its first checkpoint (after nodes
had run) or escaped as ``UnicodeEncodeError`` / ``RecursionError``; now the
run is refused with an ``InvalidInputError`` naming the value's path, and
the thread is left as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from flowcore import START, Graph, InvalidInputError, Resume, SqliteCheckpointer, append, interrupt


class State(TypedDict, total=False):
    x: Any
    ran: Annotated[list[str], append]


def ask(state: Any) -> dict[str, Any]:
    return {"x": interrupt("value?"), "ran": ["ask"]}


def deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


BAD = [("caf\udce9", "lone surrogate"), (10**5000, "too long"), (deep(150), "levels deep")]


@pytest.mark.parametrize(("value", "words"), BAD, ids=["surrogate", "huge int", "deep"])
async def test_unstorable_input_is_refused_before_any_node_runs(
    tmp_path: Path, value: Any, words: str
) -> None:
    async with SqliteCheckpointer(tmp_path / "t.db") as store:
        graph = Graph(State).add_node("ask", ask).add_edge(START, "ask").compile(checkpointer=store)
        with pytest.raises(InvalidInputError, match=words) as caught:
            await graph.run({"x": value}, thread_id="t1")
        assert "input.x" in str(caught.value)
        assert await store.get("t1") is None


@pytest.mark.parametrize(("value", "words"), BAD, ids=["surrogate", "huge int", "deep"])
async def test_an_unstorable_answer_or_update_leaves_the_paused_thread_as_it_was(
    tmp_path: Path, value: Any, words: str
) -> None:
    async with SqliteCheckpointer(tmp_path / "t.db") as store:
        graph = Graph(State).add_node("ask", ask).add_edge(START, "ask").compile(checkpointer=store)
        paused = await graph.run({}, thread_id="t1")
        assert paused.status == "interrupted"
        head = (await graph.get_state("t1")).checkpoint_id
        with pytest.raises(InvalidInputError, match=words):
            await graph.run(Resume(value), thread_id="t1")
        with pytest.raises(InvalidInputError, match=words):
            await graph.update_state("t1", {"x": value})
        assert (await graph.get_state("t1")).checkpoint_id == head
        done = await graph.run(Resume("fine"), thread_id="t1")
        assert done.state["x"] == "fine"
