"""``ScheduleSpec``: when a task plan runs, as a cron expression in an IANA timezone.

The cron dialect is the classic five fields ``minute hour day-of-month month
day-of-week``. Each field is ``*``, a number, a name (``JAN``-``DEC``,
``SUN``-``SAT``, any case), a range ``a-b``, a step ``*/n``, ``a-b/n`` or
``a/n`` (from ``a`` to the field's end), or a comma-separated list of these.
Day-of-week ``0`` and ``7`` are both Sunday. The macros ``@hourly``,
``@daily`` (``@midnight``), ``@weekly``, ``@monthly`` and ``@yearly``
(``@annually``) stand for their usual expressions.

Days follow Vixie cron: a day field counts as restricted unless it starts
with ``*``. When both day-of-month and day-of-week are restricted, a day
matches if *either* matches; otherwise both must match.

Fire times are wall-clock times in the schedule's timezone. Across a
daylight-saving change a daily job still runs exactly once: a time the clock
skips (02:30 when clocks jump from 02:00 to 03:00) fires at the first minute
after the jump, and a time the clock shows twice (01:30 when clocks fall
back) fires at its first occurrence only.
"""

from __future__ import annotations

import difflib
import zoneinfo
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from pydantic import BaseModel, ConfigDict, field_validator

from flowcore.errors import FlowcoreError

__all__ = ["CronSchedule", "ScheduleError", "ScheduleSpec", "parse_cron"]

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
        start=1,
    )
}
_DAYS = {
    name: number for number, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))
}
_MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
# Days in each month in the longest year, to refuse dates that never occur (Feb 30).
_LONGEST_MONTH = {
    1: 31,
    2: 29,
    3: 31,
    4: 30,
    5: 31,
    6: 30,
    7: 31,
    8: 31,
    9: 30,
    10: 31,
    11: 30,
    12: 31,
}
# How far next_runs looks: one full Gregorian cycle, in which every date meets every weekday.
_SEARCH_YEARS = 400
_EXAMPLE_ZONES = "'Europe/Paris' or 'America/New_York'"


class ScheduleError(FlowcoreError, ValueError):
    """A cron expression, timezone or schedule query is invalid; ``problems`` lists each.

    Example:
        >>> ScheduleError(["hour field '25': 25 is out of range (hour allows 0-23)"]).problems
        ("hour field '25': 25 is out of range (hour allows 0-23)",)
    """

    code = "schedule-invalid"

    def __init__(self, problems: list[str], *, expression: str | None = None) -> None:
        self.problems = tuple(problems)
        self.expression = expression
        listed = "; ".join(problems)
        super().__init__(
            f"cron expression {expression!r} is invalid: {listed}"
            if expression is not None
            else listed
        )


@dataclass(frozen=True, slots=True)
class _Field:
    """How one of the five cron fields is spelled and what it allows."""

    name: str
    low: int
    high: int
    star_high: int
    names: Mapping[str, int]
    allowed: str


_FIELDS = (
    _Field("minute", 0, 59, 59, {}, "0-59"),
    _Field("hour", 0, 23, 23, {}, "0-23"),
    _Field("day-of-month", 1, 31, 31, {}, "1-31"),
    _Field("month", 1, 12, 12, _MONTHS, "1-12 or JAN-DEC"),
    _Field("day-of-week", 0, 7, 6, _DAYS, "0-7 or SUN-SAT; 0 and 7 are Sunday"),
)


class _Bad(Exception):
    """One item of a field is malformed; the message says why."""


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """A parsed cron expression: the allowed values of each field.

    ``days_of_week`` uses 0 for Sunday (a ``7`` in the expression becomes 0).
    ``days_of_month_restricted`` and ``days_of_week_restricted`` say whether
    the field was written without a leading ``*``; when both are, a day
    matches if either field matches.

    Example:
        >>> cron = parse_cron("*/15 9-17 * * MON-FRI")
        >>> sorted(cron.minutes), sorted(cron.days_of_week)
        ([0, 15, 30, 45], [1, 2, 3, 4, 5])
    """

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    days_of_month_restricted: bool
    days_of_week_restricted: bool

    def matches_day(self, day: date) -> bool:
        """Whether the schedule fires at some time of ``day`` (a calendar date).

        Example:
            >>> from datetime import date
            >>> parse_cron("0 0 13 * FRI").matches_day(date(2024, 9, 6))  # a Friday
            True
        """
        if day.month not in self.months:
            return False
        by_date = day.day in self.days_of_month
        by_weekday = (day.weekday() + 1) % 7 in self.days_of_week
        if self.days_of_month_restricted and self.days_of_week_restricted:
            return by_date or by_weekday
        return by_date and by_weekday

    def matches(self, wall_clock: datetime) -> bool:
        """Whether the schedule fires at this wall-clock minute (its timezone is ignored).

        Example:
            >>> from datetime import datetime
            >>> parse_cron("0 13 * * TUE").matches(datetime(2024, 9, 3, 13, 0))
            True
        """
        return (
            wall_clock.minute in self.minutes
            and wall_clock.hour in self.hours
            and self.matches_day(wall_clock.date())
        )


def parse_cron(expression: str) -> CronSchedule:
    """Parse a 5-field cron expression or macro; :class:`ScheduleError` names each bad field.

    Example:
        >>> sorted(parse_cron("0 13 * * TUE").days_of_week)
        [2]
        >>> parse_cron("@daily") == parse_cron("0 0 * * *")
        True
    """
    text = expression.strip()
    if text.startswith("@"):
        macro = _MACROS.get(text.lower())
        if macro is None:
            raise ScheduleError(
                [f"unknown macro {text!r}; use one of {', '.join(_MACROS)}"], expression=expression
            )
        text = macro
    parts = text.split()
    if len(parts) != len(_FIELDS):
        raise ScheduleError(
            [
                f"it has {len(parts)} field{'s' if len(parts) != 1 else ''} but needs 5: minute "
                'hour day-of-month month day-of-week (e.g. "0 13 * * TUE"), or a macro such as '
                "@daily"
            ],
            expression=expression,
        )
    problems: list[str] = []
    sets: list[frozenset[int]] = []
    for spec, part in zip(_FIELDS, parts, strict=True):
        values, found = _parse_field(spec, part)
        problems += found
        sets.append(values)
    if problems:
        raise ScheduleError(problems, expression=expression)
    minutes, hours, days, months, weekdays = sets
    cron = CronSchedule(
        minutes=minutes,
        hours=hours,
        days_of_month=days,
        months=months,
        days_of_week=frozenset(d % 7 for d in weekdays),
        days_of_month_restricted=not parts[2].startswith("*"),
        days_of_week_restricted=not parts[4].startswith("*"),
    )
    either = cron.days_of_month_restricted and cron.days_of_week_restricted
    if not either and not any(d <= _LONGEST_MONTH[m] for m in months for d in days):
        raise ScheduleError(
            [
                f"day-of-month field {parts[2]!r} never occurs in month field {parts[3]!r}, so "
                "the schedule would never fire; pick days that exist in those months"
            ],
            expression=expression,
        )
    return cron


def _parse_field(spec: _Field, text: str) -> tuple[frozenset[int], list[str]]:
    values: set[int] = set()
    problems: list[str] = []
    for item in text.split(","):
        try:
            values |= _parse_item(spec, item)
        except _Bad as bad:
            problems.append(
                f"{spec.name} field {text!r}: {bad} ({spec.name} allows {spec.allowed})"
            )
    return frozenset(values), problems


def _parse_item(spec: _Field, item: str) -> set[int]:
    if not item:
        raise _Bad("a list item is empty")
    base, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not step_text.isdecimal():
            raise _Bad(f"step {step_text!r} is not a whole number")
        step = int(step_text)
        if not 1 <= step <= spec.high:
            raise _Bad(f"step {step} must be between 1 and {spec.high}")
    if base == "*":
        start, end = spec.low, spec.star_high
    elif "-" in base:
        first, _, last = base.partition("-")
        if not first or not last:
            raise _Bad(f"range {base!r} is missing a bound")
        start, end = _value(spec, first), _value(spec, last)
        if spec.names is _DAYS and end == 0 and start > 0:
            end = 7  # FRI-SUN: Sunday closes the week
        if start > end:
            raise _Bad(f"range {base!r} runs backwards ({start} is after {end})")
    else:
        start = _value(spec, base)
        end = spec.star_high if slash else start
    return set(range(start, end + 1, step))


def _value(spec: _Field, token: str) -> int:
    if token.isdecimal():
        number = int(token)
        if not spec.low <= number <= spec.high:
            raise _Bad(f"{number} is out of range")
        return number
    if token.upper() in spec.names:
        return spec.names[token.upper()]
    kind = {"month": "a month name", "day-of-week": "a day name"}.get(spec.name)
    raise _Bad(f"{token!r} is not a number" + (f" or {kind}" if kind else ""))


def _zone(name: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        pass
    known = {zone.lower(): zone for zone in zoneinfo.available_timezones()}
    close = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.75)
    hint = f" (did you mean {known[close[0]]!r}?)" if close else ""
    raise ScheduleError(
        [f"unknown timezone {name!r}; use an IANA timezone name such as {_EXAMPLE_ZONES}{hint}"]
    )


class ScheduleSpec(BaseModel):
    """When a task plan runs: a cron expression read in an IANA timezone, plus a description.

    Example:
        >>> from datetime import datetime, UTC
        >>> spec = ScheduleSpec(cron_expression="0 13 * * TUE", timezone="America/New_York",
        ...                     human_readable="every Tuesday at 1pm")
        >>> [t.isoformat() for t in spec.next_runs(datetime(2024, 9, 1, tzinfo=UTC), 2)]
        ['2024-09-03T13:00:00-04:00', '2024-09-10T13:00:00-04:00']
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    cron_expression: str
    timezone: str = "UTC"
    human_readable: str

    @field_validator("cron_expression")
    @classmethod
    def _check_cron(cls, value: str) -> str:
        parse_cron(value)
        return value

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        _zone(value)
        return value

    @field_validator("human_readable")
    @classmethod
    def _check_description(cls, value: str) -> str:
        if not value.strip():
            raise ValueError(
                "human_readable must not be blank; say in words when it runs, "
                "e.g. 'every Tuesday at 13:00'"
            )
        return value

    @property
    def cron(self) -> CronSchedule:
        """The parsed cron expression.

        Example:
            >>> spec = ScheduleSpec(cron_expression="@hourly", human_readable="hourly")
            >>> sorted(spec.cron.minutes)
            [0]
        """
        return parse_cron(self.cron_expression)

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        """The timezone the cron expression is read in.

        Example:
            >>> ScheduleSpec(cron_expression="@daily", human_readable="daily").zone.key
            'UTC'
        """
        return _zone(self.timezone)

    def next_runs(self, after: datetime, count: int = 1) -> list[datetime]:
        """The next ``count`` fire times strictly after ``after``, aware and in this timezone.

        A naive ``after`` is read as wall-clock time in this schedule's timezone.

        Example:
            >>> from datetime import datetime
            >>> spec = ScheduleSpec(cron_expression="0 0 1 * *", human_readable="monthly")
            >>> [t.date().isoformat() for t in spec.next_runs(datetime(2024, 1, 15), 2)]
            ['2024-02-01', '2024-03-01']
        """
        if count < 1:
            raise ScheduleError([f"count must be at least 1, got {count}"])
        zone, cron = self.zone, self.cron
        start = (after if after.tzinfo else after.replace(tzinfo=zone)).astimezone(UTC)
        # Clock changes move wall time by at most a few hours; earlier candidates can be skipped
        # without converting them.
        horizon = start.astimezone(zone).replace(tzinfo=None) - timedelta(hours=6)
        hours, minutes = sorted(cron.hours), sorted(cron.minutes)
        found: list[datetime] = []
        for day in _days(horizon.date(), cron):
            for hour in hours:
                for minute in minutes:
                    wall = datetime.combine(day, time(hour, minute))
                    if wall < horizon:
                        continue
                    instant = _instant(wall, zone)
                    if instant <= start or (found and instant <= found[-1]):
                        continue
                    found.append(instant)
                    if len(found) == count:
                        return [t.astimezone(zone) for t in found]
        return [t.astimezone(zone) for t in found]


def _days(first: date, cron: CronSchedule) -> Iterator[date]:
    """Every date from ``first`` on that the schedule fires on, for one Gregorian cycle."""
    year, month = first.year, first.month
    for _ in range(_SEARCH_YEARS * 12):
        if month in cron.months:
            day = max(first, date(year, month, 1))
            while day.month == month:
                if cron.matches_day(day):
                    yield day
                day += timedelta(days=1)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        if year > date.max.year:
            return


def _instant(wall: datetime, zone: tzinfo) -> datetime:
    """The UTC instant a wall-clock time fires at (see the module docstring for clock changes)."""
    instant = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) == wall:
        return instant  # fold=0 is the first occurrence of a time shown twice
    probe = wall
    for _ in range(24 * 60):
        probe += timedelta(minutes=1)
        instant = probe.replace(tzinfo=zone).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) == probe:
            return instant
    return instant  # pragma: no cover - no timezone skips a whole day of minutes mid-day
