"""The schedule store's contract, and the row codec its SQLite and Postgres twins share.

A store keeps two tables: the schedules, and the *slot claims*, one row per
``(schedule_id, slot)`` under a UNIQUE key. Claiming a slot is an
``INSERT ... ON CONFLICT DO NOTHING``: of several schedulers that try, one
gets the row and fires the slot, the others get nothing. :meth:`claim_due`
does a whole tick in one transaction: it reads the enabled schedules (on
Postgres ``FOR UPDATE SKIP LOCKED``, so schedulers split the work), asks
:func:`~flowcore.schedules.slots.decide` what each one fires, inserts the
claims and moves each cursor. A second scheduler then sees the moved cursor
and finds nothing due; the UNIQUE key holds even if it did not.

Slots are *at most once*: a scheduler that dies between the claim and the
run loses that slot (it is never fired twice).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from flowcore.errors import InvalidInputError
from flowcore.schedules.model import Schedule, SlotClaim, check_spec
from flowcore.schedules.slots import decide, next_slot

__all__ = [
    "SCHEDULE_COLUMNS",
    "SLOT_COLUMNS",
    "DueSlot",
    "ScheduleStore",
    "TickPlan",
    "check_grace",
    "check_now",
    "due_at",
    "plan_tick",
    "schedule_from_row",
    "schedule_to_row",
    "slot_from_row",
]

SCHEDULE_COLUMNS = (
    "schedule_id, user_id, cron, timezone, description, target, target_id, inputs, enabled, "
    "missed, created_at, cursor"
)
"""The schedule table's columns, in the order the row codec uses."""

SLOT_COLUMNS = "schedule_id, slot, kind, missed, claimed_by, claimed_at, run_id, status"
"""The slot-claim table's columns, in the order the row codec uses."""


@dataclass(frozen=True, slots=True)
class DueSlot:
    """A slot this scheduler claimed, with the schedule it belongs to: fire it.

    Example:
        >>> # for due in await store.claim_due(now, grace=60, claimed_by="s1"): ...
    """

    schedule: Schedule
    claim: SlotClaim


# A due_at for a schedule that never fires again (no cron slot left before year 9999).
_NEVER = 253402300799.0


def due_at(schedule: Schedule, cursor: float) -> float:
    """When ``schedule`` next needs a tick: its first slot after ``cursor`` (epoch seconds).

    Stores keep it in an indexed column, so a tick reads only the schedules
    that are due instead of every schedule.

    Example:
        >>> from flowcore.schedules.model import new_schedule
        >>> due_at(new_schedule({"id": "p", "name": "P", "nodes": []}, cron="@hourly",
        ...                     now=0.0), 0.0)
        3600.0
    """
    upcoming = next_slot(schedule, datetime.fromtimestamp(cursor, UTC))
    return _NEVER if upcoming is None else upcoming.timestamp()


@dataclass(frozen=True, slots=True)
class TickPlan:
    """What a tick writes for one schedule: the claim to insert (if any), cursor and due_at.

    Example:
        >>> TickPlan(None, 60.0, 120.0).claim is None
        True
    """

    claim: SlotClaim | None
    cursor: float
    due_at: float


def plan_tick(schedule: Schedule, now: datetime, *, grace: float, claimed_by: str) -> TickPlan:
    """The pure part of a tick for one schedule (see :func:`~flowcore.schedules.slots.decide`).

    Example:
        >>> from flowcore.schedules.model import new_schedule
        >>> s = new_schedule({"id": "p", "name": "P", "nodes": []}, cron="@hourly", now=0.0)
        >>> plan = plan_tick(s, datetime.fromtimestamp(3610, UTC), grace=60, claimed_by="s1")
        >>> (plan.claim.slot, plan.cursor, plan.due_at)
        (3600.0, 3600.0, 7200.0)
    """
    decision = decide(schedule, now, grace=grace)
    if decision is None:
        return TickPlan(None, schedule.cursor, due_at(schedule, schedule.cursor))
    cursor = max(schedule.cursor, decision.cursor)
    claim = (
        None
        if decision.fire is None
        else SlotClaim(
            schedule.schedule_id,
            decision.fire.timestamp(),
            decision.kind,
            decision.skipped,
            claimed_by,
            now.timestamp(),
        )
    )
    return TickPlan(claim, cursor, due_at(schedule, cursor))


@runtime_checkable
class ScheduleStore(Protocol):
    """Where schedules and their slot claims live (SQLite by default, or Postgres).

    Example:
        >>> # async with SqliteScheduleStore("flowcore.db") as store:
        >>> #     await store.add(new_schedule(plan, user_id="ada"))
    """

    async def add(self, schedule: Schedule) -> Schedule:
        """Store a new schedule; :class:`ScheduleExistsError` if its id is taken."""
        ...

    async def get(self, schedule_id: str) -> Schedule:
        """The schedule; :class:`ScheduleNotFoundError` if there is none."""
        ...

    async def list(
        self, *, user_id: str | None = None, enabled: bool | None = None
    ) -> builtins.list[Schedule]:
        """Schedules matching the filters given, by id."""
        ...

    async def remove(self, schedule_id: str) -> bool:
        """Delete the schedule and its claims; True if there was one."""
        ...

    async def set_enabled(self, schedule_id: str, enabled: bool, *, now: float) -> Schedule:
        """Enable or disable; enabling moves the cursor to ``now`` (no catch-up for off time)."""
        ...

    async def claim_slot(
        self,
        schedule_id: str,
        slot: float,
        *,
        kind: str = "on_time",
        missed: int = 0,
        claimed_by: str,
        claimed_at: float,
    ) -> bool:
        """Claim one slot; True for the one caller that got it, False for every other."""
        ...

    async def claim_due(
        self, now: datetime, *, grace: float, claimed_by: str
    ) -> builtins.list[DueSlot]:
        """One tick in one transaction: decide, claim and move cursors; the slots won."""
        ...

    async def finish_slot(self, schedule_id: str, slot: float, *, run_id: str, status: str) -> None:
        """Record the run a claimed slot became and how it ended."""
        ...

    async def slots(
        self, schedule_id: str | None = None, *, limit: int | None = None
    ) -> builtins.list[SlotClaim]:
        """Claimed slots (of one schedule, or all), oldest first."""
        ...


def check_now(now: datetime) -> datetime:
    """``now`` if it is timezone-aware, else :class:`InvalidInputError`.

    Example:
        >>> from datetime import UTC
        >>> check_now(datetime(2024, 1, 1, tzinfo=UTC)).year
        2024
    """
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise InvalidInputError(
            f"now must be a timezone-aware datetime, got {now!r}; use datetime.now(UTC)"
        )
    return now


def check_grace(grace: float) -> float:
    """``grace`` (seconds a slot may be late and still be on time) if it is >= 0.

    Example:
        >>> check_grace(60)
        60.0
    """
    if isinstance(grace, bool) or not isinstance(grace, int | float) or grace < 0:
        raise InvalidInputError(f"grace must be a number of seconds >= 0, got {grace!r}")
    return float(grace)


def schedule_to_row(schedule: Schedule) -> tuple[Any, ...]:
    """The schedule as a row of :data:`SCHEDULE_COLUMNS` (documents as JSON text).

    Example:
        >>> from flowcore.schedules.model import new_schedule
        >>> schedule_to_row(new_schedule({"id": "p", "name": "P", "nodes": []},
        ...                              cron="@daily", schedule_id="d", now=0.0))[:4]
        ('d', None, '@daily', 'UTC')
    """
    spec = schedule.spec
    return (
        schedule.schedule_id,
        schedule.user_id,
        spec.cron_expression,
        spec.timezone,
        spec.human_readable,
        json.dumps(dict(schedule.target), sort_keys=True),
        schedule.target_id,
        json.dumps(dict(schedule.inputs), sort_keys=True),
        bool(schedule.enabled),
        schedule.missed,
        float(schedule.created_at),
        float(schedule.cursor),
    )


def schedule_from_row(row: Sequence[Any]) -> Schedule:
    """Rebuild a :class:`Schedule` from a row of :data:`SCHEDULE_COLUMNS`.

    Example:
        >>> from flowcore.schedules.model import new_schedule
        >>> s = new_schedule({"id": "p", "name": "P", "nodes": []}, cron="@daily", now=0.0)
        >>> schedule_from_row(schedule_to_row(s)) == s
        True
    """
    (sid, user, cron, tz, text, target, _tid, inputs, enabled, missed, created, cursor) = row
    return Schedule(
        schedule_id=sid,
        user_id=user,
        spec=check_spec(cron, tz, text),
        target=_json(target),
        inputs=_json(inputs),
        enabled=bool(enabled),
        missed=missed,
        created_at=float(created),
        cursor=float(cursor),
    )


def slot_from_row(row: Sequence[Any]) -> SlotClaim:
    """Rebuild a :class:`SlotClaim` from a row of :data:`SLOT_COLUMNS`.

    Example:
        >>> slot_from_row(("d", 60.0, "on_time", 0, "s1", 61.0, None, None)).slot
        60.0
    """
    sid, slot, kind, missed, by, at, run_id, status = row
    return SlotClaim(sid, float(slot), kind, int(missed), by, float(at), run_id, status)


def _json(value: Any) -> Mapping[str, Any]:
    if isinstance(value, bytes | bytearray | memoryview):
        value = bytes(value).decode()
    loaded = json.loads(value) if isinstance(value, str) else value
    return dict(loaded)
