"""Spec: slot arithmetic in the schedule's IANA timezone, across DST, and the missed-slot policy.

The DST policy (flowcore.schedules.slots): a wall time the clock skips fires
once at the jump; a wall time the clock shows twice fires once, at its first
occurrence. So a daily 01:30 schedule fires exactly once on every day.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from flowcore.schedules import decide, latest_slot, new_schedule, next_slot, slot_instant
from flowcore.schedules.slots import slots_between

PIPELINE: dict[str, Any] = {"id": "p", "name": "P", "nodes": []}
LONDON = ZoneInfo("Europe/London")
NEW_YORK = ZoneInfo("America/New_York")


def schedule(cron: str, tz: str = "UTC", *, missed: str = "skip", since: datetime | None = None):  # type: ignore[no-untyped-def]
    created = since or datetime(2024, 1, 1, tzinfo=UTC)
    return new_schedule(PIPELINE, cron=cron, timezone=tz, missed=missed, now=created.timestamp())


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


# ---------------------------------------------------------------- DST


def test_a_0130_slot_on_the_spring_forward_day_fires_once_at_the_jump() -> None:
    # Europe/London, 2024-03-31: clocks go from 01:00 GMT straight to 02:00 BST; 01:30 never shows.
    s = schedule("30 1 * * *", "Europe/London")
    fired = slots_between(s, utc(2024, 3, 29), utc(2024, 4, 2))
    local = [t.astimezone(LONDON).strftime("%m-%d %H:%M %Z") for t in fired]
    assert local == ["03-29 01:30 GMT", "03-30 01:30 GMT", "03-31 02:00 BST", "04-01 01:30 BST"]
    assert fired[2] == utc(2024, 3, 31, 1, 0)  # the instant of the jump


def test_a_0130_slot_on_the_fall_back_day_fires_once_at_its_first_occurrence() -> None:
    # Europe/London, 2024-10-27: 01:00-01:59 is shown twice (BST, then GMT).
    s = schedule("30 1 * * *", "Europe/London")
    fired = slots_between(s, utc(2024, 10, 25), utc(2024, 10, 29))
    local = [t.astimezone(LONDON).strftime("%m-%d %H:%M %Z") for t in fired]
    assert local == ["10-25 01:30 BST", "10-26 01:30 BST", "10-27 01:30 BST", "10-28 01:30 GMT"]


def test_a_ticking_scheduler_fires_the_fall_back_slot_once_even_in_the_repeated_hour() -> None:
    s = schedule("30 1 * * *", "Europe/London", since=utc(2024, 10, 26, 12))
    fired = []
    now = utc(2024, 10, 26, 12)
    while now < utc(2024, 10, 28):  # a tick every minute through both 01:30s
        decision = decide(s, now, grace=60)
        if decision is not None:
            if decision.fire is not None:
                fired.append(decision.fire)
            s = type(s)(**{**_fields(s), "cursor": decision.cursor})
        now += timedelta(minutes=1)
    assert fired == [utc(2024, 10, 27, 0, 30)]  # 01:30 BST; 01:30 GMT (01:30 UTC) does not fire


def _fields(s: Any) -> dict[str, Any]:
    return {name: getattr(s, name) for name in s.__dataclass_fields__}


def test_new_york_0230_is_moved_to_the_jump_and_hourly_slots_are_never_doubled() -> None:
    daily = schedule("30 2 * * *", "America/New_York")
    [spring] = [t for t in slots_between(daily, utc(2024, 3, 10), utc(2024, 3, 11))]
    assert spring.astimezone(NEW_YORK).strftime("%H:%M %Z") == "03:00 EDT"
    hourly = schedule("0 * * * *", "America/New_York")
    # 2024-11-03 lasts 25 hours; each of its 24 wall-clock hours fires once (01:00 EST does not).
    day = slots_between(hourly, utc(2024, 11, 3, 3, 59), utc(2024, 11, 4, 4))
    assert len(day) == len(set(day)) == 24
    assert [t.astimezone(NEW_YORK).strftime("%H %Z") for t in day[:3]] == [
        "00 EDT",
        "01 EDT",
        "02 EST",
    ]


def test_slot_instant_states_the_policy_directly() -> None:
    assert slot_instant(datetime(2024, 3, 31, 1, 30), LONDON) == utc(2024, 3, 31, 1, 0)
    assert slot_instant(datetime(2024, 10, 27, 1, 30), LONDON) == utc(2024, 10, 27, 0, 30)
    assert slot_instant(datetime(2024, 7, 1, 9, 0), LONDON) == utc(2024, 7, 1, 8, 0)


@pytest.mark.parametrize("tz", ["Europe/London", "America/New_York", "Australia/Lord_Howe"])
@pytest.mark.parametrize("cron", ["30 1 * * *", "30 2 * * *", "0 * * * *", "0 13 * * TUE"])
def test_cronsim_slots_agree_with_schedule_spec_over_a_whole_year(tz: str, cron: str) -> None:
    s = schedule(cron, tz)
    ours = slots_between(s, utc(2024, 1, 1), utc(2025, 1, 1), limit=100_000)
    spec = [t.astimezone(UTC) for t in s.spec.next_runs(utc(2024, 1, 1), len(ours) + 1)]
    assert ours == spec[: len(ours)]
    assert spec[len(ours)] > utc(2025, 1, 1)


def test_next_and_latest_slot_bracket_an_instant() -> None:
    s = schedule("0 13 * * TUE", "Europe/Paris")
    now = utc(2024, 9, 5, 8)  # a Thursday
    assert next_slot(s, now) == utc(2024, 9, 10, 11)
    assert latest_slot(s, now) == utc(2024, 9, 3, 11)
    assert latest_slot(s, utc(2024, 9, 3, 11)) == utc(2024, 9, 3, 11)  # at or before


# ---------------------------------------------------------------- missed slots


def test_nothing_is_due_before_the_first_slot_after_creation() -> None:
    s = schedule("0 * * * *", since=utc(2024, 1, 1, 9, 30))
    assert decide(s, utc(2024, 1, 1, 9, 59), grace=60) is None


def test_an_on_time_slot_fires_under_either_policy() -> None:
    for missed in ("skip", "catch_up_once"):
        s = schedule("0 * * * *", missed=missed, since=utc(2024, 1, 1, 9, 30))
        d = decide(s, utc(2024, 1, 1, 10, 0, 30), grace=60)
        assert d is not None
        assert (d.fire, d.kind, d.skipped) == (utc(2024, 1, 1, 10), "on_time", 0)


def test_skip_fires_nothing_after_downtime_and_moves_the_cursor_on() -> None:
    s = schedule("0 * * * *", missed="skip", since=utc(2024, 1, 1, 9))
    d = decide(s, utc(2024, 1, 3, 9, 30), grace=60)  # down two days
    assert d is not None
    assert (d.fire, d.skipped, d.cursor) == (None, 48, utc(2024, 1, 3, 9).timestamp())


def test_skip_still_fires_the_current_slot_when_it_is_on_time() -> None:
    s = schedule("0 * * * *", missed="skip", since=utc(2024, 1, 1, 9))
    d = decide(s, utc(2024, 1, 1, 14, 0, 10), grace=60)
    assert d is not None
    assert (d.fire, d.kind, d.skipped) == (utc(2024, 1, 1, 14), "on_time", 4)


def test_catch_up_once_fires_exactly_one_run_for_the_missed_interval() -> None:
    s = schedule("*/5 * * * *", missed="catch_up_once", since=utc(2024, 1, 1, 9))
    d = decide(s, utc(2024, 1, 1, 17, 2), grace=60)  # 96 slots missed
    assert d is not None
    assert (d.fire, d.kind, d.skipped) == (utc(2024, 1, 1, 17), "catch_up", 95)
