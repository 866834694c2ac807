"""The schedule store contract: every ScheduleStore (SQLite, Postgres) passes these specs.

A subclass provides ``make_store(tmp_path)``, returning an open store, and
``make_second_store(tmp_path)``, a second store on the same database with
its own connections (a second scheduler). Times are fixed instants; nothing
here reads the wall clock or sleeps.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from flowcore.schedules import (
    Schedule,
    ScheduleExistsError,
    ScheduleNotFoundError,
    ScheduleStore,
    new_schedule,
)

PIPELINE: dict[str, Any] = {"id": "digest", "name": "Digest", "nodes": []}
START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)  # a Monday


def hourly(schedule_id: str = "h", *, missed: str = "skip", user: str | None = "ada") -> Schedule:
    """A schedule firing at minute 0 of every hour, created at START."""
    return new_schedule(
        PIPELINE,
        cron="0 * * * *",
        schedule_id=schedule_id,
        user_id=user,
        missed=missed,
        now=START.timestamp(),
    )


def at(hours: float) -> datetime:
    """START plus ``hours``."""
    return START + timedelta(hours=hours)


class ScheduleStoreContract:
    """Specs every schedule store must pass."""

    async def make_store(self, tmp_path: Path) -> Any:
        raise NotImplementedError

    async def make_second_store(self, tmp_path: Path) -> Any:
        raise NotImplementedError

    @pytest.fixture
    async def store(self, tmp_path: Path) -> Any:
        store = await self.make_store(tmp_path)
        yield store
        await store.aclose()

    # ------------------------------------------------------------- schedules

    async def test_it_is_a_schedule_store(self, store: Any) -> None:
        assert isinstance(store, ScheduleStore)

    async def test_a_schedule_round_trips_with_every_field(self, store: Any) -> None:
        plan = {
            "plan_id": "lunch",
            "entry_step_id": "s1",
            "steps": [{"step_id": "s1", "block_id": "query_memory"}],
            "schedule": {
                "cron_expression": "0 13 * * TUE",
                "timezone": "Europe/Paris",
                "human_readable": "Tuesdays at 1pm",
            },
        }
        made = new_schedule(
            plan, user_id="ada", schedule_id="lunch-tue", missed="catch_up_once", now=1.5
        )
        await store.add(made)
        got = await store.get("lunch-tue")
        assert got == made
        assert (got.spec.human_readable, got.target_id, got.cursor) == (
            "Tuesdays at 1pm",
            "lunch",
            1.5,
        )

    async def test_list_filters_by_user_and_enabled_and_sorts_by_id(self, store: Any) -> None:
        for sid, user in (("b", "ada"), ("a", "bob"), ("c", "ada")):
            await store.add(hourly(sid, user=user))
        await store.set_enabled("c", False, now=at(0).timestamp())
        assert [s.schedule_id for s in await store.list()] == ["a", "b", "c"]
        assert [s.schedule_id for s in await store.list(user_id="ada")] == ["b", "c"]
        assert [s.schedule_id for s in await store.list(enabled=False)] == ["c"]
        assert [s.schedule_id for s in await store.list(user_id="ada", enabled=True)] == ["b"]

    async def test_a_taken_id_is_refused_and_an_unknown_one_is_not_found(self, store: Any) -> None:
        await store.add(hourly("dup"))
        with pytest.raises(ScheduleExistsError, match="'dup' exists already"):
            await store.add(hourly("dup"))
        with pytest.raises(ScheduleNotFoundError, match="flowcore schedule list"):
            await store.get("nope")
        with pytest.raises(ScheduleNotFoundError):
            await store.set_enabled("nope", True, now=0.0)

    async def test_remove_deletes_the_schedule_and_its_claims(self, store: Any) -> None:
        await store.add(hourly("gone"))
        assert await store.claim_due(at(1), grace=60, claimed_by="s1")
        assert await store.remove("gone") is True
        assert await store.remove("gone") is False
        assert await store.list() == []
        assert await store.slots("gone") == []

    # ------------------------------------------------------------- slots

    async def test_a_slot_is_claimed_once_whoever_asks(self, store: Any) -> None:
        await store.add(hourly())
        slot = at(1).timestamp()
        assert await store.claim_slot("h", slot, claimed_by="s1", claimed_at=slot) is True
        assert await store.claim_slot("h", slot, claimed_by="s2", claimed_at=slot) is False
        [claim] = await store.slots("h")
        assert (claim.claimed_by, claim.slot_time) == ("s1", at(1))

    async def test_a_due_slot_fires_once_and_the_cursor_moves_past_it(self, store: Any) -> None:
        await store.add(hourly())
        assert await store.claim_due(at(0.5), grace=60, claimed_by="s1") == []
        [due] = await store.claim_due(at(1), grace=60, claimed_by="s1")
        assert (due.claim.slot_time, due.claim.kind, due.schedule.schedule_id) == (
            at(1),
            "on_time",
            "h",
        )
        assert await store.claim_due(at(1), grace=60, claimed_by="s2") == []
        assert (await store.get("h")).cursor == at(1).timestamp()

    async def test_finish_slot_notes_the_run(self, store: Any) -> None:
        await store.add(hourly())
        [due] = await store.claim_due(at(1), grace=60, claimed_by="s1")
        await store.finish_slot("h", due.claim.slot, run_id="run-1", status="completed")
        [claim] = await store.slots("h")
        assert (claim.run_id, claim.status) == ("run-1", "completed")

    async def test_skip_fires_none_of_the_missed_slots(self, store: Any) -> None:
        await store.add(hourly(missed="skip"))
        # Down from 09:00 to 14:30: slots 10:00 .. 14:00 all passed unseen.
        assert await store.claim_due(at(5.5), grace=60, claimed_by="s1") == []
        [due] = await store.claim_due(at(6), grace=60, claimed_by="s1")
        assert due.claim.slot_time == at(6)
        assert [c.slot_time for c in await store.slots("h")] == [at(6)]

    async def test_catch_up_once_fires_one_run_for_the_missed_interval(self, store: Any) -> None:
        await store.add(hourly(missed="catch_up_once"))
        [due] = await store.claim_due(at(5.5), grace=60, claimed_by="s1")
        assert (due.claim.slot_time, due.claim.kind, due.claim.missed) == (at(5), "catch_up", 4)
        assert await store.claim_due(at(5.75), grace=60, claimed_by="s1") == []
        [nxt] = await store.claim_due(at(6), grace=60, claimed_by="s1")
        assert (nxt.claim.slot_time, nxt.claim.kind) == (at(6), "on_time")

    async def test_a_disabled_schedule_never_fires_and_enabling_does_not_catch_up(
        self, store: Any
    ) -> None:
        await store.add(hourly(missed="catch_up_once"))
        await store.set_enabled("h", False, now=at(0).timestamp())
        assert await store.claim_due(at(3), grace=60, claimed_by="s1") == []
        enabled = await store.set_enabled("h", True, now=at(3.5).timestamp())
        assert enabled.enabled
        assert enabled.cursor == at(3.5).timestamp()
        assert await store.claim_due(at(3.75), grace=60, claimed_by="s1") == []
        [due] = await store.claim_due(at(4), grace=60, claimed_by="s1")
        assert due.claim.slot_time == at(4)

    async def test_two_stores_ticking_together_claim_each_slot_once(
        self, store: Any, tmp_path: Path
    ) -> None:
        other = await self.make_second_store(tmp_path)
        try:
            for n in range(4):
                await store.add(hourly(f"s{n}", missed="catch_up_once"))
            won: list[tuple[str, float]] = []
            for hour in range(1, 25):
                results = await asyncio.gather(
                    store.claim_due(at(hour), grace=60, claimed_by="one"),
                    other.claim_due(at(hour), grace=60, claimed_by="two"),
                )
                won += [(d.claim.schedule_id, d.claim.slot) for r in results for d in r]
            assert sorted(won) == sorted(
                (f"s{n}", at(h).timestamp()) for n in range(4) for h in range(1, 25)
            )
            assert len(await store.slots()) == 4 * 24
        finally:
            await other.aclose()
