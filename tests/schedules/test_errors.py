"""Spec: a bad schedule is refused with a typed error naming the field and how to fix it."""

from __future__ import annotations

from typing import Any

import pytest

from flowcore.errors import FlowcoreError
from flowcore.pipeline.schedule import ScheduleError
from flowcore.schedules import InvalidScheduleError, new_schedule

PIPELINE: dict[str, Any] = {"id": "p", "name": "P", "nodes": []}
READS_DOC: dict[str, Any] = {
    "id": "digest",
    "name": "Digest",
    "nodes": [{"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}],
}


@pytest.mark.parametrize(
    ("cron", "says"),
    [
        ("0 25 * * *", "hour field '25': 25 is out of range"),
        ("0 13 * *", "it has 4 fields but needs 5"),
        ("0 13 * * FUNDAY", "'FUNDAY' is not a number or a day name"),
        ("@fortnightly", "unknown macro '@fortnightly'"),
        ("", "it is empty"),
        ("0 9 * * FRI-SUN", "is not read by the cron library (Bad day-of-week)"),
    ],
)
def test_a_bad_cron_expression_names_the_field_and_the_fix(cron: str, says: str) -> None:
    with pytest.raises(InvalidScheduleError) as caught:
        new_schedule(PIPELINE, cron=cron)
    assert caught.value.field == "cron_expression"
    message = str(caught.value)
    assert message.startswith("schedule field 'cron_expression': ")
    assert says in message
    assert "e.g." in message  # how to fix it


def test_an_unknown_timezone_names_the_field_and_suggests_the_right_name() -> None:
    with pytest.raises(InvalidScheduleError) as caught:
        new_schedule(PIPELINE, cron="@daily", timezone="Europe/Pariss")
    assert caught.value.field == "timezone"
    assert "unknown timezone 'Europe/Pariss'" in str(caught.value)
    assert "did you mean 'Europe/Paris'?" in str(caught.value)


def test_the_error_is_a_schedule_error_a_value_error_and_a_flowcore_error() -> None:
    with pytest.raises(InvalidScheduleError) as caught:
        new_schedule(PIPELINE, cron="@daily", timezone="Mars/Olympus")
    assert isinstance(caught.value, ScheduleError | ValueError | FlowcoreError)
    assert caught.value.code == "schedule-field-invalid"


@pytest.mark.parametrize(
    ("kwargs", "field", "says"),
    [
        ({"missed": "always"}, "missed", "use 'skip'"),
        ({"schedule_id": "bad id!"}, "schedule_id", "is not a valid id"),
        ({"inputs": {"x": object()}}, "inputs", "plain JSON"),
        ({"user_id": ""}, "user_id", "non-empty string"),
    ],
)
def test_other_fields_are_named_too(kwargs: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(InvalidScheduleError) as caught:
        new_schedule(PIPELINE, cron="@daily", **kwargs)
    assert caught.value.field == field
    assert says in str(caught.value)


def test_inputs_are_checked_against_what_the_pipeline_reads() -> None:
    with pytest.raises(InvalidScheduleError, match="input 'doc' is missing") as caught:
        new_schedule(READS_DOC, cron="@daily")
    assert caught.value.field == "inputs"
    assert new_schedule(READS_DOC, cron="@daily", inputs={"doc": "x"}).inputs == {"doc": "x"}


def test_a_pipeline_without_a_cron_and_a_plan_without_a_schedule_are_refused() -> None:
    with pytest.raises(InvalidScheduleError, match="it is missing; pass one") as caught:
        new_schedule(PIPELINE)
    assert caught.value.field == "cron_expression"
    with pytest.raises(InvalidScheduleError, match="pipeline or task plan is invalid") as bad:
        new_schedule({"id": "p"}, cron="@daily")
    assert bad.value.field == "target"


def test_a_plan_brings_its_own_cron_and_timezone_and_flags_override_them() -> None:
    plan = {
        "plan_id": "lunch",
        "entry_step_id": "s1",
        "steps": [{"step_id": "s1", "block_id": "query_memory"}],
        "schedule": {
            "cron_expression": "0 13 * * TUE",
            "timezone": "Europe/Paris",
            "human_readable": "every Tuesday at 1pm",
        },
    }
    own = new_schedule(plan, now=0.0)
    assert (own.spec.cron_expression, own.spec.timezone) == ("0 13 * * TUE", "Europe/Paris")
    assert own.schedule_id.startswith("lunch-")
    moved = new_schedule(plan, cron="0 12 * * WED", now=0.0)
    assert (moved.spec.cron_expression, moved.spec.timezone) == ("0 12 * * WED", "UTC")
