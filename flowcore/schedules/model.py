"""What a schedule is: a plan or pipeline, its input, its user, and when it fires.

A :class:`Schedule` is plain data. It holds the pipeline or task-plan
document it runs (so a schedule keeps working after the file it came from
is edited or gone), the run input, the user the runs are for, the
:class:`~flowcore.pipeline.schedule.ScheduleSpec` (cron expression + IANA
timezone), whether it is enabled, and what happens to slots the scheduler
missed while it was down (:data:`MissedSlotPolicy`).

``cursor`` is the instant (epoch seconds) up to which every slot has been
dealt with, fired or skipped; a new schedule starts at its creation time, so
slots before it never fire.

:func:`new_schedule` builds one from loose parts and refuses a bad cron
expression, timezone, definition or input with a typed error naming the
field and how to fix it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import ValidationError

from flowcore.checkpoint.serde import check_json_value
from flowcore.errors import FlowcoreError, InvalidInputError, SerializationError
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan, as_pipeline, load_definition
from flowcore.pipeline.runner import check_run_inputs
from flowcore.pipeline.schedule import ScheduleError, ScheduleSpec, _zone, parse_cron
from flowcore.schedules.slots import library_problem

__all__ = [
    "MISSED_SLOT_POLICIES",
    "InvalidScheduleError",
    "MissedSlotPolicy",
    "Schedule",
    "ScheduleExistsError",
    "ScheduleNotFoundError",
    "ScheduleStoreError",
    "SlotClaim",
    "new_schedule",
]

MissedSlotPolicy = Literal["skip", "catch_up_once"]
"""What a schedule does with slots that passed while no scheduler ran.

``skip`` fires none of them and waits for the next slot; ``catch_up_once``
fires exactly one run (for the latest missed slot) for the whole missed
interval, however many slots it held.
"""

MISSED_SLOT_POLICIES: tuple[str, ...] = get_args(MissedSlotPolicy)
"""The accepted values of :data:`MissedSlotPolicy`."""

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class InvalidScheduleError(ScheduleError):
    """A schedule field is wrong; ``field`` names it and the message says how to fix it.

    Example:
        >>> try:
        ...     new_schedule({"id": "p", "name": "P", "nodes": []}, cron="0 25 * * *")
        ... except InvalidScheduleError as exc:
        ...     exc.field
        'cron_expression'
    """

    code = "schedule-field-invalid"

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        ValueError.__init__(self, f"schedule field {field!r}: {message}")
        self.problems = (message,)
        self.expression = None


class ScheduleStoreError(FlowcoreError):
    """The schedule store's database failed (connect, migrate, read or write)."""

    code = "schedule-store"


class ScheduleNotFoundError(FlowcoreError, LookupError):
    """No schedule has this id.

    Example:
        >>> str(ScheduleNotFoundError("daily"))
        "no schedule 'daily'; 'flowcore schedule list' lists the schedules"
    """

    code = "schedule-not-found"

    def __init__(self, schedule_id: str) -> None:
        self.schedule_id = schedule_id
        super().__init__(
            f"no schedule {schedule_id!r}; 'flowcore schedule list' lists the schedules"
        )


class ScheduleExistsError(FlowcoreError, ValueError):
    """A schedule with this id already exists.

    Example:
        >>> str(ScheduleExistsError("daily")).startswith("a schedule 'daily' exists")
        True
    """

    code = "schedule-exists"

    def __init__(self, schedule_id: str) -> None:
        self.schedule_id = schedule_id
        super().__init__(
            f"a schedule {schedule_id!r} exists already; remove it first "
            "('flowcore schedule remove ID') or pick another id"
        )


@dataclass(frozen=True, slots=True)
class Schedule:
    """One stored schedule (see the module docstring for the fields' meaning).

    Example:
        >>> s = new_schedule({"id": "p", "name": "P", "nodes": []}, cron="30 1 * * *",
        ...                  timezone="Europe/London", schedule_id="nightly", now=0.0)
        >>> (s.schedule_id, s.spec.timezone, s.missed, s.target_id)
        ('nightly', 'Europe/London', 'skip', 'p')
    """

    schedule_id: str
    user_id: str | None
    spec: ScheduleSpec
    target: Mapping[str, Any]
    inputs: Mapping[str, Any]
    enabled: bool
    missed: MissedSlotPolicy
    created_at: float
    cursor: float

    @property
    def target_id(self) -> str:
        """The id of the pipeline (``id``) or plan (``plan_id``) the schedule runs."""
        return str(self.target.get("plan_id") or self.target.get("id") or "")

    def definition(self) -> Pipeline | TaskPlan:
        """The pipeline or task plan to run, read from the stored document.

        Example:
            >>> new_schedule({"id": "p", "name": "P", "nodes": []}, cron="@daily",
            ...              now=0.0).definition().id
            'p'
        """
        return load_definition(dict(self.target))


@dataclass(frozen=True, slots=True)
class SlotClaim:
    """One slot a scheduler claimed (and so fired): at most one row per schedule and slot.

    ``slot`` is the slot's instant in epoch seconds (:attr:`slot_time` as an
    aware UTC datetime). ``kind`` is ``on_time``, or ``catch_up`` for the one
    run :data:`MissedSlotPolicy` ``catch_up_once`` fires for a missed
    interval; ``missed`` counts the slots that interval held besides this one.
    ``run_id`` and ``status`` are filled in when the run ends.

    Example:
        >>> SlotClaim("nightly", 1711845000.0, "on_time", 0, "s1", 0.0).slot_time.isoformat()
        '2024-03-31T00:30:00+00:00'
    """

    schedule_id: str
    slot: float
    kind: Literal["on_time", "catch_up"]
    missed: int
    claimed_by: str
    claimed_at: float
    run_id: str | None = None
    status: str | None = None

    @property
    def slot_time(self) -> datetime:
        """The slot as an aware UTC datetime."""
        return datetime.fromtimestamp(self.slot, UTC)


def _check_id(schedule_id: str) -> str:
    if not isinstance(schedule_id, str) or not _ID.match(schedule_id):
        raise InvalidScheduleError(
            "schedule_id",
            f"{schedule_id!r} is not a valid id; use 1-128 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit (e.g. 'lunch-tuesday')",
        )
    return schedule_id


def check_spec(cron: str, timezone: str, description: str | None = None) -> ScheduleSpec:
    """A :class:`ScheduleSpec`, or :class:`InvalidScheduleError` naming the bad field.

    Example:
        >>> check_spec("0 13 * * TUE", "America/New_York").human_readable
        'cron 0 13 * * TUE in America/New_York'
    """
    if not isinstance(cron, str) or not cron.strip():
        raise InvalidScheduleError(
            "cron_expression",
            'it is empty; give five fields, e.g. "0 13 * * TUE", or a macro such as @daily',
        )
    try:
        parse_cron(cron)
    except ScheduleError as exc:
        raise InvalidScheduleError(
            "cron_expression",
            f"{cron!r} is invalid: {'; '.join(exc.problems)}; write five fields "
            'minute hour day-of-month month day-of-week, e.g. "30 1 * * *" for 01:30 daily',
        ) from None
    problem = library_problem(cron)
    if problem is not None:
        raise InvalidScheduleError(
            "cron_expression",
            f"{cron!r} is not read by the cron library ({problem}); write a day range that "
            "does not wrap past Saturday as a list, e.g. FRI,SAT,SUN instead of FRI-SUN",
        )
    if not isinstance(timezone, str) or not timezone.strip():
        raise InvalidScheduleError(
            "timezone", "it is empty; give an IANA name such as 'Europe/Paris' or 'UTC'"
        )
    try:
        _zone(timezone)
    except ScheduleError as exc:
        raise InvalidScheduleError("timezone", "; ".join(exc.problems)) from None
    text = description if description and description.strip() else f"cron {cron} in {timezone}"
    try:
        return ScheduleSpec(cron_expression=cron, timezone=timezone, human_readable=text)
    except ValidationError as exc:  # pragma: no cover - both fields were checked above
        raise InvalidScheduleError("schedule", str(exc)) from None


def new_schedule(
    target: Pipeline | TaskPlan | Mapping[str, Any],
    *,
    cron: str | None = None,
    timezone: str | None = None,
    description: str | None = None,
    user_id: str | None = None,
    inputs: Mapping[str, Any] | None = None,
    schedule_id: str | None = None,
    missed: str = "skip",
    enabled: bool = True,
    now: float | None = None,
) -> Schedule:
    """Build a validated :class:`Schedule`; cron and timezone default to the plan's own schedule.

    A :class:`TaskPlan` with a ``schedule`` gives the cron expression and
    timezone unless ``cron`` / ``timezone`` are passed; anything else needs
    ``cron`` (``timezone`` then defaults to UTC). The run input is checked
    against what the pipeline reads, as ``flowcore run`` checks it.

    Raises:
        InvalidScheduleError: naming ``cron_expression``, ``timezone``,
            ``missed``, ``schedule_id``, ``target`` or ``inputs``.

    Example:
        >>> plan = {"plan_id": "lunch", "entry_step_id": "s1",
        ...         "steps": [{"step_id": "s1", "block_id": "query_memory"}],
        ...         "schedule": {"cron_expression": "0 13 * * TUE", "timezone": "Europe/Paris",
        ...                      "human_readable": "Tuesdays at 1pm"}}
        >>> s = new_schedule(plan, user_id="ada", now=0.0)
        >>> (s.spec.cron_expression, s.spec.timezone, s.user_id)
        ('0 13 * * TUE', 'Europe/Paris', 'ada')
    """
    try:
        definition = (
            target if isinstance(target, Pipeline | TaskPlan) else load_definition(dict(target))
        )
    except (ValueError, TypeError) as exc:
        raise InvalidScheduleError(
            "target", f"the pipeline or task plan is invalid: {exc}"
        ) from None
    own = definition.schedule if isinstance(definition, TaskPlan) else None
    if cron is None and own is None:
        raise InvalidScheduleError(
            "cron_expression",
            "it is missing; pass one (e.g. --cron '30 1 * * *'), or give a task plan "
            "whose 'schedule' has one",
        )
    spec = check_spec(
        cron if cron is not None else own.cron_expression,  # type: ignore[union-attr]
        timezone or (own.timezone if own is not None and cron is None else "UTC"),
        description or (own.human_readable if own is not None and cron is None else None),
    )
    if missed not in MISSED_SLOT_POLICIES:
        raise InvalidScheduleError(
            "missed",
            f"{missed!r} is not a missed-slot policy; use 'skip' (fire none of the slots missed "
            "while no scheduler ran) or 'catch_up_once' (fire one run for them)",
        )
    if user_id is not None and (not isinstance(user_id, str) or not user_id):
        raise InvalidScheduleError("user_id", "give a non-empty string, or None for no user")
    given = dict(inputs or {})
    try:
        check_json_value(given, path="inputs")
    except SerializationError as exc:
        raise InvalidScheduleError("inputs", f"{exc}; inputs must be plain JSON data") from None
    problems = check_run_inputs(as_pipeline(definition), given)
    if problems:
        raise InvalidScheduleError("inputs", "; ".join(problems))
    created = datetime.now(UTC).timestamp() if now is None else float(now)
    document = definition.model_dump(mode="json", by_alias=True)
    return Schedule(
        schedule_id=_check_id(schedule_id or f"{_target_id(document)}-{uuid.uuid4().hex[:8]}"),
        user_id=user_id,
        spec=spec,
        target=document,
        inputs=given,
        enabled=bool(enabled),
        missed=missed,  # type: ignore[arg-type]
        created_at=created,
        cursor=created,
    )


def _target_id(document: Mapping[str, Any]) -> str:
    raw = str(document.get("plan_id") or document.get("id") or "schedule")
    cleaned = re.sub(r"[^A-Za-z0-9_.:-]", "-", raw).lstrip("_.:-")[:100]
    return cleaned or "schedule"


def check_schedule(schedule: Schedule) -> Schedule:
    """``schedule`` if it can be stored, else :class:`InvalidInputError` saying what is wrong.

    Example:
        >>> check_schedule(new_schedule({"id": "p", "name": "P", "nodes": []},
        ...                             cron="@daily", now=0.0)).enabled
        True
    """
    if not isinstance(schedule, Schedule):
        raise InvalidInputError(
            f"a schedule store keeps Schedule objects, got {type(schedule).__name__}; "
            "build one with flowcore.schedules.new_schedule(...)"
        )
    _check_id(schedule.schedule_id)
    return schedule
