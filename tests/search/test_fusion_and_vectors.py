"""Reciprocal rank fusion, vector bytes and cosine ranking (numpy and pure Python agree)."""

from __future__ import annotations

import math

import pytest

from flowcore.search import (
    decode_vector,
    encode_vector,
    rank_by_cosine,
    reciprocal_rank_fusion,
    text_hash,
)
from flowcore.search import vectors as vectors_module


def test_rrf_scores_are_the_sum_of_reciprocal_ranks() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)


def test_rrf_puts_an_item_both_lists_rank_above_one_list_topped() -> None:
    fused = [item for item, _ in reciprocal_rank_fusion([["a", "b"], ["x", "b"]])]
    assert fused[0] == "b"


def test_rrf_ties_go_to_the_best_single_rank_then_the_first_list() -> None:
    assert [i for i, _ in reciprocal_rank_fusion([["a"], ["b"]])] == ["a", "b"]
    assert [i for i, _ in reciprocal_rank_fusion([["b"], ["a"]])] == ["b", "a"]


def test_rrf_refuses_a_k_below_one() -> None:
    with pytest.raises(ValueError, match="k must be at least 1"):
        reciprocal_rank_fusion([["a"]], k=0)


def test_vectors_are_float32_bytes_and_round_trip() -> None:
    blob = encode_vector([0.25, -1.5, 3.0])
    assert len(blob) == 12
    assert decode_vector(blob) == [0.25, -1.5, 3.0]


def test_text_hash_tells_texts_apart() -> None:
    assert text_hash("send an email") == text_hash("send an email")
    assert text_hash("send an email") != text_hash("send an e-mail")


def _unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


CASES = {
    "x": encode_vector(_unit(1.0, 0.0, 0.0)),
    "y": encode_vector(_unit(0.0, 1.0, 0.0)),
    "xy": encode_vector(_unit(1.0, 1.0, 0.0)),
    "y2": encode_vector(_unit(0.0, 2.0, 0.0)),
}


def test_rank_by_cosine_orders_by_similarity_best_first() -> None:
    ranked = rank_by_cosine(_unit(0.9, 0.1, 0.0), list(CASES), list(CASES.values()), 4)
    assert [k for k, _ in ranked] == ["x", "xy", "y", "y2"]
    assert ranked[0][1] == pytest.approx(0.9938, abs=1e-3)


def test_pure_python_ranking_matches_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    query = _unit(0.2, 0.7, 0.1)
    with_numpy = rank_by_cosine(query, list(CASES), list(CASES.values()), 3)
    monkeypatch.setattr(vectors_module, "_numpy", lambda: None)
    pure = rank_by_cosine(query, list(CASES), list(CASES.values()), 3)
    assert [k for k, _ in pure] == [k for k, _ in with_numpy]
    # Equal vectors ("y" and "y2" normalised) keep their given order.
    assert [k for k, _ in pure][:2] == ["y", "y2"]
    for (_, a), (_, b) in zip(pure, with_numpy, strict=True):
        assert a == pytest.approx(b, abs=1e-6)


def test_rank_by_cosine_of_nothing_is_empty() -> None:
    assert rank_by_cosine([1.0], [], [], 5) == []
    assert rank_by_cosine([1.0], ["a"], [encode_vector([1.0])], 0) == []
