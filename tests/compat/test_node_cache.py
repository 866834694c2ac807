"""Spec: a node with a CachePolicy on a graph compiled with ``cache=`` runs once per input.

A hit skips the node and reuses its writes (the ``updates`` stream marks it
``{"__metadata__": {"cached": True}}``); a different input, a cleared cache
or a node without a policy runs again; a node that fails is not cached. The
cache is anything with LangGraph's cache interface (``langgraph.cache``'s
``InMemoryCache`` is checked too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import pytest

from flowcore.compat.langgraph import END, START, CachePolicy, StateGraph


class DictCache:
    """The smallest cache with LangGraph's interface: no expiry."""

    def __init__(self) -> None:
        self.entries: dict[tuple[Any, str], Any] = {}

    async def aget(self, keys: Sequence[tuple[Any, str]]) -> dict[tuple[Any, str], Any]:
        return {k: self.entries[k] for k in keys if k in self.entries}

    async def aset(self, pairs: Mapping[tuple[Any, str], tuple[Any, int | None]]) -> None:
        self.entries.update({k: value for k, (value, _ttl) in pairs.items()})

    async def aclear(self, namespaces: Sequence[tuple[str, ...]] | None = None) -> None:
        self.entries = {
            k: v
            for k, v in self.entries.items()
            if namespaces is not None and k[0] not in namespaces
        }


class State(TypedDict):
    n: int
    out: int


def _app(cache: Any, calls: list[int], *, fail_on: int | None = None) -> Any:
    def square(state: State) -> dict[str, Any]:
        calls.append(state["n"])
        if state["n"] == fail_on:
            raise RuntimeError("boom")
        return {"out": state["n"] ** 2}

    graph = StateGraph(State).add_node("square", square, cache_policy=CachePolicy())
    graph.add_edge(START, "square").add_edge("square", END)
    return graph.compile(cache=cache)


def test_the_same_input_is_answered_from_the_cache() -> None:
    calls: list[int] = []
    app = _app(DictCache(), calls)
    assert app.invoke({"n": 3}) == {"n": 3, "out": 9}
    assert list(app.stream({"n": 3})) == [{"square": {"out": 9}, "__metadata__": {"cached": True}}]
    assert app.invoke({"n": 4}) == {"n": 4, "out": 16}
    assert calls == [3, 4]


def test_clearing_the_cache_runs_the_node_again() -> None:
    calls: list[int] = []
    app = _app(DictCache(), calls)
    app.invoke({"n": 3})
    app.clear_cache()
    app.invoke({"n": 3})
    assert calls == [3, 3]


def test_a_failure_is_not_cached() -> None:
    calls: list[int] = []
    app = _app(DictCache(), calls, fail_on=5)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="boom"):
            app.invoke({"n": 5})
    assert calls == [5, 5]


def test_without_a_cache_the_policy_does_nothing_and_clear_cache_is_refused() -> None:
    calls: list[int] = []
    app = _app(None, calls)
    app.invoke({"n": 2})
    app.invoke({"n": 2})
    assert calls == [2, 2]
    with pytest.raises(ValueError, match="No cache is set"):
        app.clear_cache()


def test_langgraphs_in_memory_cache_works_as_the_cache() -> None:
    memory = pytest.importorskip("langgraph.cache.memory")
    calls: list[int] = []
    app = _app(memory.InMemoryCache(), calls)
    assert [app.invoke({"n": 6}) for _ in range(2)] == [{"n": 6, "out": 36}] * 2
    assert calls == [6]
