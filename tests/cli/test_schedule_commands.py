"""Spec: ``flowcore schedule add|list|slots|enable|disable|remove`` and ``flowcore scheduler``.

``scheduler --once --at INSTANT`` ticks once as if it were that instant, so
these specs fire slots without sleeping and without reading the wall clock
in an assertion.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import Outcome, Project


def _add(cli: Callable[..., Outcome], project: Project, *extra: str) -> Outcome:
    return cli(
        "schedule", "add", str(project.greeting), "--blocks", str(project.blocks),
        "--user", "ada", "--input", "name=Ada", *extra,
    )  # fmt: skip


def test_add_list_fire_and_show_a_schedule(cli: Callable[..., Outcome], project: Project) -> None:
    added = _add(
        cli, project, "--id", "morning", "--cron", "0 9 * * *", "--timezone", "Europe/Paris",
        "--missed", "catch_up_once",
    )  # fmt: skip
    assert added.code == 0, added.err
    assert added.out.startswith("added schedule morning: greeting for user ada")

    listed = cli("schedule", "list", "--json").json()
    assert [(s["id"], s["cron"], s["timezone"], s["missed"], s["enabled"]) for s in listed] == [
        ("morning", "0 9 * * *", "Europe/Paris", "catch_up_once", True)
    ]
    assert "morning" in cli("schedule", "list").out

    # Years later (the scheduler never ran): catch_up_once fires one run for all of them.
    fired = cli("scheduler", "--once", "--at", "2099-01-01T12:00:00Z")
    assert fired.code == 0, fired.err
    assert "fired morning slot 2099-01-01 09:00 CET (catch_up) -> run " in fired.out
    assert fired.out.rstrip().endswith("scheduler stopped: 1 fired, 0 failed")
    again = cli("scheduler", "--once", "--at", "2099-01-01T12:00:30Z")
    assert "0 fired" in again.out

    [slot] = cli("schedule", "slots", "morning", "--json").json()
    assert (slot["slot"], slot["kind"], slot["status"]) == (
        "2099-01-01 09:00 CET",
        "catch_up",
        "completed",
    )
    [run] = cli("runs", "list", "--json").json()
    assert (run["run_id"], run["user_id"], run["thread_id"]) == (
        slot["run_id"],
        "ada",
        "schedule-morning-20990101T0800Z",
    )


def test_skip_fires_only_an_on_time_slot(cli: Callable[..., Outcome], project: Project) -> None:
    assert _add(cli, project, "--id", "s", "--cron", "0 9 * * *").code == 0
    late = cli("scheduler", "--once", "--at", "2099-01-01T12:00:00Z")
    assert "0 fired" in late.out
    on_time = cli("scheduler", "--once", "--at", "2099-01-02T09:00:20Z")
    assert "fired s slot 2099-01-02 09:00 UTC (on_time)" in on_time.out


def test_disable_enable_and_remove(cli: Callable[..., Outcome], project: Project) -> None:
    assert _add(cli, project, "--id", "d", "--cron", "@hourly").code == 0
    assert cli("schedule", "disable", "d").out.startswith("schedule d disabled; next: -")
    assert cli("scheduler", "--once", "--at", "2099-01-01T00:00:10Z").out.count("fired d") == 0
    assert cli("schedule", "enable", "d").code == 0
    assert cli("schedule", "remove", "d").out == "removed schedule d\n"
    gone = cli("schedule", "remove", "d")
    assert (gone.code, gone.err) == (
        2,
        "flowcore: error: no schedule 'd'; 'flowcore schedule list' lists the schedules\n",
    )
    assert "no schedules yet" in cli("schedule", "list").out


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--cron", "0 9 * * MONDAY"), "schedule field 'cron_expression': '0 9 * * MONDAY'"),
        (("--cron", "@daily", "--timezone", "Europe/Lisbo"), "did you mean 'Europe/Lisbon'?"),
        ((), "schedule field 'cron_expression': it is missing; pass one"),
    ],
)
def test_a_bad_schedule_is_one_line_naming_the_field(
    cli: Callable[..., Outcome], project: Project, flags: tuple[str, ...], says: str
) -> None:
    bad = _add(cli, project, *flags)
    assert bad.code == 2
    assert bad.err.startswith("flowcore: error: ")
    assert says in bad.err
    assert bad.err.count("\n") == 1


def test_at_needs_once_and_a_timezone(cli: Callable[..., Outcome]) -> None:
    assert "the option --at needs --once" in cli("scheduler", "--at", "2099-01-01T00:00:00Z").err
    assert "with a timezone" in cli("scheduler", "--once", "--at", "2099-01-01T00:00").err


def test_a_task_plan_brings_its_own_schedule_and_runs_in_postgres(
    cli: Callable[..., Outcome],
    project: Project,
    pg_schema_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLOWCORE_DATABASE_URL", pg_schema_url)
    plan = project.write(
        "weekly.json",
        {
            "plan_id": "weekly_hello",
            "entry_step_id": "hello",
            "steps": [
                {"step_id": "hello", "block_id": "greet", "inputs": {"name": "<<input.name>>"}}
            ],
            "schedule": {
                "cron_expression": "0 13 * * TUE",
                "timezone": "America/New_York",
                "human_readable": "every Tuesday at 1pm",
            },
        },
    )

    def env_cli(*argv: str) -> Outcome:  # no --db: the database comes from the environment
        import io

        from flowcore.cli import main

        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), stdout=out, stderr=err)
        return Outcome(code, out.getvalue(), err.getvalue())

    added = env_cli(
        "schedule", "add", str(plan), "--id", "tue", "--blocks", str(project.blocks),
        "--user", "bob", "--input", "name=Bob",
    )  # fmt: skip
    assert added.code == 0, added.err
    assert "every Tuesday at 1pm (0 13 * * TUE America/New_York)" in added.out
    fired = env_cli("scheduler", "--once", "--in-process", "--at", "2099-01-06T18:00:30Z")
    assert "fired tue slot 2099-01-06 13:00 EST (on_time)" in fired.out, fired.err
    assert " · db postgresql://" in fired.out.splitlines()[0]
    [run] = env_cli("runs", "list", "--json").json()
    assert (run["user_id"], run["status"]) == ("bob", "completed")
    assert not project.db.exists()  # nothing went to the SQLite default


def test_on_postgres_the_scheduler_queues_its_slots_for_the_workers(
    env_cli: Callable[..., Outcome],
    project: Project,
    pg_schema_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("procrastinate")
    import asyncio

    import psycopg

    from flowcore.queue.slots import slot_key
    from flowcore.schedules.postgres import PostgresScheduleStore

    monkeypatch.setenv("FLOWCORE_DATABASE_URL", pg_schema_url)
    at = "2099-01-01T09:00:05Z"
    added = env_cli(
        "schedule", "add", str(project.greeting), "--blocks", str(project.blocks),
        "--user", "ada", "--input", "name=Ada", "--id", "nine", "--cron", "0 9 * * *",
    )  # fmt: skip
    assert added.code == 0, added.err
    queued = env_cli("scheduler", "--once", "--at", at)
    again = env_cli("scheduler", "--once", "--at", at)  # a second scheduler: nothing left
    assert queued.code == 0, queued.err
    assert "slots queued for flowcore worker" in queued.out.splitlines()[0]
    assert "scheduler stopped: 1 fired, 0 failed" in queued.out
    assert "scheduler stopped: 0 fired, 0 failed" in again.out

    async def recorded() -> tuple[list[object], list[object]]:
        async with PostgresScheduleStore(pg_schema_url) as store:
            claims = await store.slots("nine")
        async with await psycopg.AsyncConnection.connect(pg_schema_url) as conn:
            cur = await conn.execute(
                "SELECT args->>'schedule_id' FROM procrastinate_jobs WHERE queueing_lock = %s",
                (slot_key("nine", claims[0].slot),),
            )
            jobs = [row[0] for row in await cur.fetchall()]
        return [(c.status, c.run_id) for c in claims], jobs

    claims, jobs = asyncio.run(recorded())
    assert claims == [(None, None)]  # claimed, not run here: a worker runs it
    assert jobs == ["nine"]
    assert env_cli("runs", "list", "--json").json() == []
