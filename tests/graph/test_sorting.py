"""Spec: a pass plan's sorters are prepared graphlib sorters, each starting afresh.

The first sorter of a plan is built and checked by graphlib; later ones are
copies of its prepared state. A copy must behave exactly like a sorter built
from scratch, whatever order nodes finish in, and using one must never change
the template or the sorters handed out before it.
"""

from __future__ import annotations

import random
from graphlib import CycleError, TopologicalSorter

import pytest

from flowcore.graph import sorting
from flowcore.graph.sorting import SorterTemplate


def _random_dag(rng: random.Random, size: int) -> dict[str, tuple[str, ...]]:
    names = [f"n{i}" for i in range(size)]
    preds: dict[str, tuple[str, ...]] = {}
    for i, name in enumerate(names):
        count = rng.randint(0, min(i, 3))
        preds[name] = tuple(rng.sample(names[:i], count))
    return preds


def _finish_in_random_order(
    sorter: TopologicalSorter[str], rng: random.Random
) -> list[tuple[str, ...]]:
    """Hand out ready nodes, finishing a random subset each time; record every batch."""
    seen: list[tuple[str, ...]] = []
    running: list[str] = []
    while sorter.is_active():
        ready = sorter.get_ready()
        seen.append(tuple(sorted(ready)))
        running.extend(ready)
        rng.shuffle(running)
        finished = running[: max(1, len(running) // 2)]
        del running[: len(finished)]
        sorter.done(*finished)
    return seen


@pytest.mark.parametrize("seed", range(20))
def test_each_sorter_behaves_like_one_built_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    preds = _random_dag(rng, rng.randint(1, 60))
    template = SorterTemplate(preds)
    for round_ in range(3):
        fresh: TopologicalSorter[str] = TopologicalSorter(preds)
        fresh.prepare()
        expected = _finish_in_random_order(fresh, random.Random(seed * 100 + round_))
        got = _finish_in_random_order(template.sorter(), random.Random(seed * 100 + round_))
        assert got == expected


def test_sorters_handed_out_earlier_are_not_disturbed() -> None:
    template = SorterTemplate({"a": (), "b": ("a",), "c": ("a",), "d": ("b", "c")})
    first = template.sorter()
    assert first.get_ready() == ("a",)
    first.done("a")
    second = template.sorter()  # a new pass while the first is half-way
    assert second.get_ready() == ("a",)
    assert set(first.get_ready()) == {"b", "c"}
    assert second.get_ready() == ()


def test_a_cycle_is_still_reported_by_graphlib() -> None:
    template = SorterTemplate({"a": ("b",), "b": ("a",)})
    with pytest.raises(CycleError):
        template.sorter()


def test_without_a_copyable_graphlib_every_sorter_is_built_from_scratch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sorting, "_COPYABLE", False)
    template = SorterTemplate({"a": (), "b": ("a",)})
    sorter = template.sorter()
    assert sorter.get_ready() == ("a",)
    sorter.done("a")
    assert sorter.get_ready() == ("b",)
    assert template.sorter().get_ready() == ("a",)


def test_this_python_takes_the_copying_path() -> None:
    # Python 3.11 is what flowcore supports; if this fails, graphlib's layout
    # changed and sorters are being built from scratch (correct, only slower).
    assert sorting._COPYABLE
