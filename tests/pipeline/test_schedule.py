"""Spec: a ScheduleSpec is a validated 5-field cron expression in an IANA timezone.

Bad fields are refused with a message naming the field, the bad value and
what is allowed; ``next_runs`` gives the coming fire times as aware datetimes
in the schedule's timezone, following the wall clock across DST changes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from flowcore.errors import FlowcoreError
from flowcore.pipeline import CronSchedule, ScheduleError, ScheduleSpec, parse_cron

NEW_YORK = ZoneInfo("America/New_York")


def spec(cron: str, timezone: str = "UTC") -> ScheduleSpec:
    return ScheduleSpec(cron_expression=cron, timezone=timezone, human_readable="test")


def problems(expression: str) -> tuple[str, ...]:
    with pytest.raises(ScheduleError) as refused:
        parse_cron(expression)
    assert str(refused.value).startswith(f"cron expression {expression!r} is invalid: ")
    return refused.value.problems


# ------------------------------------------------------------------ valid forms


@pytest.mark.parametrize(
    ("expression", "field", "values"),
    [
        ("*/15 9-17 * * MON-FRI", "minutes", {0, 15, 30, 45}),
        ("*/15 9-17 * * MON-FRI", "hours", set(range(9, 18))),
        ("*/15 9-17 * * MON-FRI", "days_of_week", {1, 2, 3, 4, 5}),
        ("5,10-12,30-40/5 * * * *", "minutes", {5, 10, 11, 12, 30, 35, 40}),
        ("10/20 * * * *", "minutes", {10, 30, 50}),
        ("0 0 1 jan-mar/2 *", "months", {1, 3}),
        ("0 0 1 Feb,DEC *", "months", {2, 12}),
        ("0 13 * * tue", "days_of_week", {2}),
        ("0 0 * * 7", "days_of_week", {0}),
        ("0 0 * * 0,7", "days_of_week", {0}),
        ("0 0 * * FRI-SUN", "days_of_week", {5, 6, 0}),
        ("0 0 * * 5-7", "days_of_week", {5, 6, 0}),
        ("0 0 * * */2", "days_of_week", {0, 2, 4, 6}),
        ("0 0 1,15 * *", "days_of_month", {1, 15}),
        ("0 0 * * *", "days_of_month", set(range(1, 32))),
        ("  0   13 * *  TUE ", "hours", {13}),
    ],
)
def test_valid_fields_parse_to_the_values_they_allow(
    expression: str, field: str, values: set[int]
) -> None:
    assert getattr(parse_cron(expression), field) == frozenset(values)


@pytest.mark.parametrize(
    ("macro", "expansion"),
    [
        ("@hourly", "0 * * * *"),
        ("@daily", "0 0 * * *"),
        ("@weekly", "0 0 * * 0"),
        ("@monthly", "0 0 1 * *"),
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@DAILY", "0 0 * * *"),
    ],
)
def test_macros_stand_for_their_expressions(macro: str, expansion: str) -> None:
    assert parse_cron(macro) == parse_cron(expansion)


def test_a_day_field_starting_with_a_star_does_not_count_as_restricted() -> None:
    cron = parse_cron("0 0 */2 * MON")
    assert cron == CronSchedule(
        minutes=frozenset({0}),
        hours=frozenset({0}),
        days_of_month=frozenset(range(1, 32, 2)),
        months=frozenset(range(1, 13)),
        days_of_week=frozenset({1}),
        days_of_month_restricted=False,
        days_of_week_restricted=True,
    )


def test_a_spec_keeps_what_was_written_and_defaults_to_utc() -> None:
    schedule = ScheduleSpec.model_validate(
        {"cron_expression": "0 13 * * TUE", "human_readable": "every Tuesday at 1pm"}
    )
    assert schedule.cron_expression == "0 13 * * TUE"
    assert schedule.timezone == "UTC"
    assert schedule.zone == ZoneInfo("UTC")
    assert schedule.cron == parse_cron("0 13 * * TUE")


# ------------------------------------------------------------------ bad expressions


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("61 * * * *", "minute field '61': 61 is out of range (minute allows 0-59)"),
        ("0 24 * * *", "hour field '24': 24 is out of range (hour allows 0-23)"),
        ("0 0 0 * *", "day-of-month field '0': 0 is out of range (day-of-month allows 1-31)"),
        ("0 0 32 * *", "day-of-month field '32': 32 is out of range (day-of-month allows 1-31)"),
        ("0 0 * 13 *", "month field '13': 13 is out of range (month allows 1-12 or JAN-DEC)"),
        (
            "0 0 * * 8",
            "day-of-week field '8': 8 is out of range "
            "(day-of-week allows 0-7 or SUN-SAT; 0 and 7 are Sunday)",
        ),
        ("0 9-25 * * *", "hour field '9-25': 25 is out of range (hour allows 0-23)"),
    ],
)
def test_a_value_out_of_range_names_the_field_the_value_and_the_range(
    expression: str, message: str
) -> None:
    assert problems(expression) == (message,)


def test_an_unknown_month_or_day_name_is_named() -> None:
    assert problems("0 0 * JNA FUNDAY") == (
        "month field 'JNA': 'JNA' is not a number or a month name (month allows 1-12 or JAN-DEC)",
        "day-of-week field 'FUNDAY': 'FUNDAY' is not a number or a day name "
        "(day-of-week allows 0-7 or SUN-SAT; 0 and 7 are Sunday)",
    )


def test_names_are_refused_in_fields_that_have_none() -> None:
    assert problems("MON * * * *") == (
        "minute field 'MON': 'MON' is not a number (minute allows 0-59)",
    )


@pytest.mark.parametrize("expression", ["0 13 * *", "0 13 * * TUE 2024", ""])
def test_the_wrong_number_of_fields_says_which_five_are_needed(expression: str) -> None:
    (problem,) = problems(expression)
    count = len(expression.split())
    assert problem.startswith(f"it has {count} field")
    assert "needs 5: minute hour day-of-month month day-of-week" in problem
    assert "@daily" in problem


def test_an_unknown_macro_lists_the_known_ones() -> None:
    assert problems("@reboot") == (
        "unknown macro '@reboot'; use one of @hourly, @daily, @midnight, @weekly, @monthly, "
        "@yearly, @annually",
    )


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("*/0 * * * *", "minute field '*/0': step 0 must be between 1 and 59"),
        ("*/60 * * * *", "minute field '*/60': step 60 must be between 1 and 59"),
        ("0 */x * * *", "hour field '*/x': step 'x' is not a whole number"),
        ("0 1-2/3/4 * * *", "hour field '1-2/3/4': step '3/4' is not a whole number"),
    ],
)
def test_a_bad_step_is_named(expression: str, message: str) -> None:
    (problem,) = problems(expression)
    assert problem.startswith(message)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("0 17-9 * * *", "hour field '17-9': range '17-9' runs backwards (17 is after 9)"),
        ("0 0 * * SAT-MON", "day-of-week field 'SAT-MON': range 'SAT-MON' runs backwards"),
        ("0 0 * DEC-JAN *", "month field 'DEC-JAN': range 'DEC-JAN' runs backwards"),
        ("-5 * * * *", "minute field '-5': range '-5' is missing a bound"),
        ("1,,2 * * * *", "minute field '1,,2': a list item is empty"),
        ("1, * * * *", "minute field '1,': a list item is empty"),
    ],
)
def test_malformed_ranges_and_lists_are_named(expression: str, message: str) -> None:
    (problem,) = problems(expression)
    assert problem.startswith(message)


@pytest.mark.parametrize("expression", ["0 0 31 2 *", "0 0 30,31 FEB *", "0 0 31 4,6,9,11 *"])
def test_a_date_that_never_occurs_is_refused(expression: str) -> None:
    (problem,) = problems(expression)
    assert "never occurs in month field" in problem
    assert "would never fire" in problem


def test_a_missing_date_is_fine_when_the_weekday_can_fire_instead() -> None:
    assert parse_cron("0 0 31 2 MON").days_of_month == frozenset({31})


def test_every_bad_field_is_reported_at_once() -> None:
    found = problems("61 25 0 13 8")
    assert [p.split(" field ")[0] for p in found] == [
        "minute",
        "hour",
        "day-of-month",
        "month",
        "day-of-week",
    ]


def test_a_schedule_error_is_a_flowcore_value_error_with_a_code() -> None:
    with pytest.raises(ScheduleError) as refused:
        parse_cron("61 * * * *")
    assert isinstance(refused.value, FlowcoreError)
    assert isinstance(refused.value, ValueError)
    assert refused.value.code == "schedule-invalid"
    assert refused.value.expression == "61 * * * *"


# ------------------------------------------------------------------ bad specs


def spec_errors(**fields: object) -> dict[str, str]:
    data = {"cron_expression": "0 13 * * TUE", "human_readable": "weekly", **fields}
    with pytest.raises(ValidationError) as refused:
        ScheduleSpec.model_validate(data)
    return {
        ".".join(map(str, e["loc"])): e["msg"].removeprefix("Value error, ")
        for e in refused.value.errors()
    }


def test_a_bad_cron_expression_is_reported_on_its_field() -> None:
    assert spec_errors(cron_expression="0 25 * * *") == {
        "cron_expression": "cron expression '0 25 * * *' is invalid: hour field '25': 25 is out "
        "of range (hour allows 0-23)"
    }


@pytest.mark.parametrize("timezone", ["Mars/Olympus_Mons", "EST5EDT/x", "", "/etc/passwd", "../x"])
def test_an_unknown_timezone_is_named_with_an_example(timezone: str) -> None:
    message = spec_errors(timezone=timezone)["timezone"]
    assert message.startswith(f"unknown timezone {timezone!r}; use an IANA timezone name")
    assert "'Europe/Paris'" in message


@pytest.mark.parametrize(
    ("typo", "meant"), [("Europe/Pari", "Europe/Paris"), ("america/new_york", "America/New_York")]
)
def test_a_timezone_typo_suggests_the_close_name(typo: str, meant: str) -> None:
    assert spec_errors(timezone=typo)["timezone"].endswith(f"(did you mean {meant!r}?)")


@pytest.mark.parametrize("blank", ["", "   "])
def test_human_readable_must_not_be_blank(blank: str) -> None:
    assert spec_errors(human_readable=blank)["human_readable"].startswith(
        "human_readable must not be blank"
    )


def test_unknown_fields_and_changes_are_refused() -> None:
    assert "tz" in spec_errors(tz="UTC")
    schedule = spec("@daily")
    with pytest.raises(ValidationError):
        schedule.timezone = "Europe/Paris"  # type: ignore[misc]


# ------------------------------------------------------------------ next_runs


def local(*parts: int, zone: ZoneInfo = NEW_YORK) -> datetime:
    return datetime(*parts, tzinfo=zone)  # type: ignore[misc]


def test_every_tuesday_at_1pm_in_new_york_keeps_local_time_across_the_dst_change() -> None:
    schedule = spec("0 13 * * TUE", "America/New_York")

    runs = schedule.next_runs(datetime(2024, 10, 21, tzinfo=UTC), count=4)

    assert [r.isoformat() for r in runs] == [
        "2024-10-22T13:00:00-04:00",
        "2024-10-29T13:00:00-04:00",
        "2024-11-05T13:00:00-05:00",  # clocks fell back on Sunday 3 November
        "2024-11-12T13:00:00-05:00",
    ]
    assert all(r.tzinfo == NEW_YORK for r in runs)
    assert [r.astimezone(UTC).hour for r in runs] == [17, 17, 18, 18]


def test_every_tuesday_at_1pm_also_across_the_spring_change() -> None:
    runs = spec("0 13 * * TUE", "America/New_York").next_runs(local(2025, 3, 1), count=2)
    assert [r.isoformat() for r in runs] == [
        "2025-03-04T13:00:00-05:00",
        "2025-03-11T13:00:00-04:00",
    ]


def test_every_quarter_hour_in_office_hours_skips_evenings_and_weekends() -> None:
    friday_evening = datetime(2024, 9, 6, 17, 40, tzinfo=UTC)

    runs = spec("*/15 9-17 * * MON-FRI").next_runs(friday_evening, count=4)

    assert [r.strftime("%a %H:%M") for r in runs] == [
        "Fri 17:45",
        "Mon 09:00",
        "Mon 09:15",
        "Mon 09:30",
    ]


def test_the_first_of_every_month_at_midnight() -> None:
    runs = spec("0 0 1 * *").next_runs(datetime(2024, 1, 31, 12, tzinfo=UTC), count=3)
    assert [r.date().isoformat() for r in runs] == ["2024-02-01", "2024-03-01", "2024-04-01"]
    assert all((r.hour, r.minute) == (0, 0) for r in runs)


def test_when_both_day_fields_are_restricted_either_one_matches() -> None:
    runs = spec("0 0 13 * FRI").next_runs(datetime(2024, 9, 1, tzinfo=UTC), count=8)
    assert [r.strftime("%a %d %b") for r in runs] == [
        "Fri 06 Sep",
        "Fri 13 Sep",
        "Fri 20 Sep",
        "Fri 27 Sep",
        "Fri 04 Oct",
        "Fri 11 Oct",
        "Sun 13 Oct",  # the 13th, though not a Friday
        "Fri 18 Oct",
    ]


def test_when_the_day_of_month_starts_with_a_star_both_must_match() -> None:
    runs = spec("0 0 */2 * MON").next_runs(datetime(2024, 9, 1, tzinfo=UTC), count=3)
    assert [r.strftime("%a %d %b") for r in runs] == ["Mon 09 Sep", "Mon 23 Sep", "Mon 07 Oct"]


def test_fire_times_are_strictly_after_the_given_moment() -> None:
    schedule = spec("0 13 * * TUE", "America/New_York")
    (run,) = schedule.next_runs(local(2024, 10, 22, 13, 0))
    assert run == local(2024, 10, 29, 13, 0)


def test_a_naive_moment_is_read_in_the_schedules_timezone() -> None:
    schedule = spec("0 13 * * TUE", "America/New_York")
    assert schedule.next_runs(datetime(2024, 10, 22, 12, 59)) == [local(2024, 10, 22, 13, 0)]


def test_a_moment_in_another_timezone_is_compared_as_the_same_instant() -> None:
    schedule = spec("0 13 * * TUE", "Europe/Paris")
    # 06:59 in New York is 12:59 in Paris.
    (run,) = schedule.next_runs(local(2024, 10, 22, 6, 59))
    assert run.isoformat() == "2024-10-22T13:00:00+02:00"


def test_a_time_the_clock_skips_fires_right_after_the_jump() -> None:
    runs = spec("30 2 * * *", "America/New_York").next_runs(local(2024, 3, 9, 0, 0), count=3)
    assert [r.isoformat() for r in runs] == [
        "2024-03-09T02:30:00-05:00",
        "2024-03-10T03:00:00-04:00",  # 02:30 did not exist that night
        "2024-03-11T02:30:00-04:00",
    ]


def test_a_time_the_clock_shows_twice_fires_once() -> None:
    runs = spec("30 1 * * *", "America/New_York").next_runs(local(2024, 11, 2, 12, 0), count=3)
    assert [r.isoformat() for r in runs] == [
        "2024-11-03T01:30:00-04:00",
        "2024-11-04T01:30:00-05:00",
        "2024-11-05T01:30:00-05:00",
    ]


def test_the_29th_of_february_waits_for_a_leap_year() -> None:
    runs = spec("0 12 29 2 *").next_runs(datetime(2024, 3, 1, tzinfo=UTC), count=2)
    assert [r.date().isoformat() for r in runs] == ["2028-02-29", "2032-02-29"]


def test_count_must_be_positive() -> None:
    with pytest.raises(ScheduleError, match="count must be at least 1, got 0"):
        spec("@daily").next_runs(datetime(2024, 1, 1, tzinfo=UTC), count=0)
