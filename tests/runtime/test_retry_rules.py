"""Spec: each graph kind's retry policy, as the runtime's retry rule, decides like its API says."""

from __future__ import annotations

import pytest

from flowcore import RetryPolicy
from flowcore.compat.langgraph import RetryPolicy as LangGraphRetryPolicy
from flowcore.compat.langgraph._node import LangGraphRetryRule
from flowcore.scheduler.invoke import NativeRetryRule


def test_native_backoff_grows_by_the_factor_up_to_the_cap_then_gives_up() -> None:
    rule = NativeRetryRule(
        RetryPolicy(max_attempts=5, initial_interval=1.0, backoff_factor=3.0, max_interval=5.0)
    )
    pauses = [rule.pause_before_retry(ValueError(), n) for n in range(1, 6)]
    assert pauses == [1.0, 3.0, 5.0, 5.0, None]


def test_native_rule_retries_only_what_the_policy_retries() -> None:
    rule = NativeRetryRule(RetryPolicy(max_attempts=3, initial_interval=0, retry_on=KeyError))
    assert rule.pause_before_retry(KeyError("k"), 1) == 0
    assert rule.pause_before_retry(ValueError("v"), 1) is None


def test_native_jitter_adds_at_most_its_amount() -> None:
    rule = NativeRetryRule(RetryPolicy(max_attempts=2, initial_interval=1.0, jitter=0.5))
    pause = rule.pause_before_retry(ValueError(), 1)
    assert pause is not None
    assert 1.0 <= pause <= 1.5


def test_langgraph_rule_uses_the_first_policy_whose_retry_on_matches() -> None:
    rule = LangGraphRetryRule(
        [
            LangGraphRetryPolicy(
                max_attempts=2, initial_interval=1.0, jitter=False, retry_on=KeyError
            ),
            LangGraphRetryPolicy(
                max_attempts=4,
                initial_interval=0.5,
                backoff_factor=2.0,
                jitter=False,
                retry_on=ValueError,
            ),
        ]
    )
    assert [rule.pause_before_retry(KeyError(), n) for n in (1, 2)] == [1.0, None]
    assert [rule.pause_before_retry(ValueError(), n) for n in (1, 2, 3, 4)] == [
        0.5,
        1.0,
        2.0,
        None,
    ]
    assert rule.pause_before_retry(TypeError(), 1) is None


@pytest.mark.parametrize("failures", [1, 2])
def test_langgraph_jitter_adds_up_to_one_second(failures: int) -> None:
    rule = LangGraphRetryRule([LangGraphRetryPolicy(initial_interval=0.25, backoff_factor=2.0)])
    pause = rule.pause_before_retry(ConnectionError(), failures)  # retried by default
    base = 0.25 * 2.0 ** (failures - 1)
    assert pause is not None
    assert base <= pause <= base + 1
