"""Slot arithmetic: which instants a schedule fires at, and what a tick does with them.

Cron matching is cronsim's (the ``schedules`` extra, imported lazily): it
walks *wall-clock* times in the schedule's timezone. This module then turns
each wall-clock time into one instant with a stated daylight-saving policy,
the one Vixie cron and :meth:`ScheduleSpec.next_runs` follow:

* **A time the clock skips** (01:30 in Europe/London on the spring-forward
  day, when clocks jump from 01:00 to 02:00) fires once, at the instant of
  the jump (02:00 BST). The day's run is moved, never dropped.
* **A time the clock shows twice** (01:30 on the fall-back day, once in BST
  and again in GMT) fires once, at its first occurrence (01:30 BST). The
  day's run is never doubled.

So a daily schedule fires exactly once on every day, DST or not; slots are
distinct, strictly increasing instants.

:func:`decide` is the pure core of a scheduler tick: given a schedule's
cursor, the time now and the misfire grace, it says which slot (if any)
fires and where the cursor moves. Nothing here reads a clock or a database.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Literal

from flowcore.errors import InvalidInputError

if TYPE_CHECKING:
    from flowcore.schedules.model import Schedule

__all__ = [
    "Decision",
    "decide",
    "five_fields",
    "latest_slot",
    "library_problem",
    "next_slot",
    "slot_instant",
    "slots_between",
]

# Clock changes move wall time by at most two hours (Antarctica/Troll); walks start this
# far before the instant asked about, so no wall time whose instant lies after it is missed.
_SHIFT = timedelta(hours=3)
# How many missed slots a decision counts before it stops counting (a cap, not a limit).
_COUNT_CAP = 10_000


def _cronsim() -> type:
    try:
        from cronsim import CronSim
    except ImportError as exc:
        raise InvalidInputError(
            "schedules need the cronsim package to compute their slots; install it with "
            "pip install 'flowcore[schedules]'"
        ) from exc
    return CronSim


def slot_instant(wall: datetime, zone: tzinfo) -> datetime:
    """The UTC instant a naive wall-clock time fires at in ``zone`` (see the DST policy above).

    Example:
        >>> from zoneinfo import ZoneInfo
        >>> london = ZoneInfo("Europe/London")
        >>> slot_instant(datetime(2024, 3, 31, 1, 30), london).isoformat()  # skipped
        '2024-03-31T01:00:00+00:00'
        >>> slot_instant(datetime(2024, 10, 27, 1, 30), london).isoformat()  # shown twice
        '2024-10-27T00:30:00+00:00'
    """
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == wall:
        return first  # fold=0 is the earlier of two occurrences, or the only one
    # The wall time does not exist: fire at the jump, the first instant after the gap.
    # The jump lies between the two readings of the wall time; halve the span to a second.
    low = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    high = first
    if low > high:
        low, high = high, low
    before = low.astimezone(zone).utcoffset()
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone).utcoffset() == before:
            low = middle
        else:
            high = middle
    return high.replace(microsecond=0)


# cronsim reads five fields only; the macros ScheduleSpec accepts are spelled out for it.
_MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}


def five_fields(cron: str) -> str:
    """``cron`` with a macro spelled out as five fields, as cronsim reads it.

    Example:
        >>> five_fields("@hourly"), five_fields("30 1 * * *")
        ('0 * * * *', '30 1 * * *')
    """
    text = cron.strip()
    return _MACROS.get(text.lower(), text)


def library_problem(cron: str) -> str | None:
    """Why cronsim refuses ``cron`` (None if it accepts it, or if cronsim is not installed).

    ScheduleSpec's own parser has checked the expression first; this catches
    the few spellings it allows and cronsim does not (a day range that wraps
    past Saturday, such as ``FRI-SUN``).

    Example:
        >>> library_problem("0 9 * * MON-FRI") is None
        True
    """
    try:
        from cronsim import CronSim, CronSimError
    except ImportError:
        return None
    try:
        CronSim(five_fields(cron), datetime(2000, 1, 1))
    except CronSimError as exc:
        return str(exc)
    return None


def _walls(cron: str, start: datetime, *, reverse: bool = False) -> Iterator[datetime]:
    """Wall-clock matches of ``cron`` strictly after (or before) the naive ``start``."""
    return iter(_cronsim()(five_fields(cron), start, reverse=reverse))


def _zone_of(schedule: Schedule) -> tzinfo:
    return schedule.spec.zone


def next_slot(schedule: Schedule, after: datetime) -> datetime | None:
    """The first slot instant strictly after the aware ``after`` (UTC), or None if none.

    Example:
        >>> from flowcore.schedules.model import new_schedule
        >>> s = new_schedule({"id": "p", "name": "P", "nodes": []}, cron="30 1 * * *",
        ...                  timezone="Europe/London", now=0.0)
        >>> next_slot(s, datetime(2024, 3, 30, 12, tzinfo=UTC)).isoformat()
        '2024-03-31T01:00:00+00:00'
    """
    zone = _zone_of(schedule)
    wall = after.astimezone(zone).replace(tzinfo=None) - _SHIFT
    for candidate in _walls(schedule.spec.cron_expression, wall):
        instant = slot_instant(candidate, zone)
        if instant > after:
            return instant
    return None  # pragma: no cover - cronsim raises rather than running out


def latest_slot(schedule: Schedule, at: datetime) -> datetime | None:
    """The last slot instant at or before the aware ``at`` (UTC), or None if none.

    Example:
        >>> from flowcore.schedules.model import new_schedule
        >>> s = new_schedule({"id": "p", "name": "P", "nodes": []}, cron="30 1 * * *",
        ...                  timezone="Europe/London", now=0.0)
        >>> latest_slot(s, datetime(2024, 10, 27, 12, tzinfo=UTC)).isoformat()
        '2024-10-27T00:30:00+00:00'
    """
    zone = _zone_of(schedule)
    wall = at.astimezone(zone).replace(tzinfo=None) + _SHIFT + timedelta(microseconds=1)
    for candidate in _walls(schedule.spec.cron_expression, wall, reverse=True):
        instant = slot_instant(candidate, zone)
        if instant <= at:
            return instant
    return None  # pragma: no cover - cronsim raises rather than running out


def slots_between(
    schedule: Schedule, after: datetime, until: datetime, *, limit: int = _COUNT_CAP
) -> list[datetime]:
    """Every slot instant in ``(after, until]``, oldest first, at most ``limit`` of them.

    Example:
        >>> from flowcore.schedules.model import new_schedule
        >>> s = new_schedule({"id": "p", "name": "P", "nodes": []}, cron="30 1 * * *",
        ...                  timezone="Europe/London", now=0.0)
        >>> [t.isoformat() for t in slots_between(s, datetime(2024, 10, 26, tzinfo=UTC),
        ...                                        datetime(2024, 10, 28, tzinfo=UTC))]
        ['2024-10-26T00:30:00+00:00', '2024-10-27T00:30:00+00:00']
    """
    zone = _zone_of(schedule)
    wall = after.astimezone(zone).replace(tzinfo=None) - _SHIFT
    found: list[datetime] = []
    for candidate in _walls(schedule.spec.cron_expression, wall):
        instant = slot_instant(candidate, zone)
        if instant <= after or (found and instant <= found[-1]):
            continue  # before the window, or a skipped time merged into the jump
        if instant > until or len(found) >= limit:
            break
        found.append(instant)
    return found


@dataclass(frozen=True, slots=True)
class Decision:
    """What one tick does with one schedule: fire ``fire`` (or nothing), move the cursor.

    ``kind`` says why the slot fires (``on_time``, or ``catch_up`` for the one
    run of ``catch_up_once``); ``skipped`` counts the due slots that do not
    fire (capped at 10,000).

    Example:
        >>> Decision(None, "on_time", 0, 0.0).fires
        False
    """

    fire: datetime | None
    kind: Literal["on_time", "catch_up"]
    skipped: int
    cursor: float

    @property
    def fires(self) -> bool:
        """Whether a slot fires."""
        return self.fire is not None


def decide(schedule: Schedule, now: datetime, *, grace: float) -> Decision | None:
    """What a tick at ``now`` does with ``schedule``; None when no slot is due.

    The due slots are those in ``(cursor, now]``. The latest of them is *on
    time* if it is at most ``grace`` seconds old; every other due slot was
    missed (no scheduler ran when it came).

    * ``skip``: the latest slot fires if it is on time; missed slots never do.
    * ``catch_up_once``: exactly one run fires for the whole interval, for the
      latest slot: ``on_time`` if it is on time and nothing was missed, else
      ``catch_up``.

    Either way the cursor moves to the latest due slot, so each slot is
    decided once.

    Example:
        >>> from flowcore.schedules.model import new_schedule
        >>> s = new_schedule({"id": "p", "name": "P", "nodes": []}, cron="0 * * * *",
        ...                  now=datetime(2024, 1, 1, tzinfo=UTC).timestamp())
        >>> d = decide(s, datetime(2024, 1, 1, 5, 30, tzinfo=UTC), grace=60)  # down 5h30
        >>> (d.fire, d.skipped)
        (None, 5)
    """
    cursor = datetime.fromtimestamp(schedule.cursor, UTC)
    first = next_slot(schedule, cursor)
    if first is None or first > now:
        return None
    latest = latest_slot(schedule, now)
    if latest is None or latest < first:  # pragma: no cover - first <= now implies latest
        latest = first
    on_time = (now - latest).total_seconds() <= grace
    due = 1 if latest == first else len(slots_between(schedule, cursor, latest))
    if schedule.missed == "skip":
        fire = latest if on_time else None
        return Decision(fire, "on_time", due - (1 if fire else 0), latest.timestamp())
    kind: Literal["on_time", "catch_up"] = "on_time" if on_time and due == 1 else "catch_up"
    return Decision(latest, kind, due - 1, latest.timestamp())
