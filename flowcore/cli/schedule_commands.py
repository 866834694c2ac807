"""The CLI's schedule commands: ``flowcore schedule add|list|remove|enable|disable|slots``
and ``flowcore scheduler`` (the loop that fires them).

Schedules live in the CLI's database (the SQLite file, or Postgres when
``FLOWCORE_DATABASE_URL`` names one), beside the runs they become. Slot times
need the ``schedules`` extra (cronsim); without it the commands say how to
install it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import signal
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from flowcore.cli.commands import checked_definition, parse_inputs, read_blocks
from flowcore.cli.render import one_line, short, table
from flowcore.cli.workspace import CliError, Workspace, choose_provider, load_tools, open_workspace
from flowcore.result import RunResult
from flowcore.schedules import (
    MISSED_SLOT_POLICIES,
    DueSlot,
    ManualClock,
    RunnerSink,
    Schedule,
    Scheduler,
    new_schedule,
    next_slot,
    open_schedule_store,
)
from flowcore.schedules.postgres import PostgresScheduleStore
from flowcore.schedules.scheduler import SlotSink
from flowcore.schedules.sqlite import SqliteScheduleStore
from flowcore.storage import DatabaseTarget

__all__ = ["SCHEDULE_COMMANDS", "add_schedule_commands"]


def add_schedule_commands(
    command: Callable[[str, str], argparse.ArgumentParser],
    *,
    common: Callable[[argparse.ArgumentParser], None],
    model_options: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add ``schedule`` and ``scheduler`` through the parser's ``command(name, help)`` helper.

    Example:
        >>> # add_schedule_commands(command, common=_common, model_options=_model_options)
    """
    schedule = command("schedule", "schedules that run a pipeline or task plan for a user")
    sub = schedule.add_subparsers(dest="schedule_command", required=True, metavar="ACTION")
    add = sub.add_parser("add", help="schedule a pipeline or task plan JSON file")
    add.add_argument("file", metavar="FILE.json")
    add.add_argument("--id", dest="schedule_id", help="the schedule's id (default: made up)")
    add.add_argument("--user", help="the user the runs are for (memory is per user)")
    add.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE|@FILE.json",
        help="a run input of every run (repeatable)",
    )
    add.add_argument("--cron", help="5-field cron expression (default: the plan's schedule)")
    add.add_argument("--timezone", help="IANA timezone of the cron expression (default: UTC)")
    add.add_argument("--description", help="when it runs, in words")
    add.add_argument(
        "--missed",
        choices=MISSED_SLOT_POLICIES,
        default="skip",
        help="slots passed while no scheduler ran: skip them, or fire one run for them",
    )
    add.add_argument("--disabled", action="store_true", help="add it switched off")
    add.add_argument("--blocks", action="append", default=[], metavar="FILE.json")
    listed = sub.add_parser("list", help="list schedules with their next slot")
    listed.add_argument("--user")
    remove = sub.add_parser("remove", help="delete a schedule and its slot records")
    enable = sub.add_parser("enable", help="switch a schedule on (missed time is not caught up)")
    disable = sub.add_parser("disable", help="switch a schedule off")
    slots = sub.add_parser("slots", help="the slots a schedule fired and the runs they became")
    slots.add_argument("--limit", type=int, default=50)
    for p in (remove, enable, disable, slots):
        p.add_argument("schedule_id", metavar="ID")
    for p in (add, listed, remove, enable, disable, slots):
        common(p)

    loop = command("scheduler", "fire due schedule slots as runs until stopped (Ctrl-C)")
    loop.add_argument("--poll", type=float, default=1.0, help="seconds between ticks")
    loop.add_argument(
        "--grace", type=float, default=60.0, help="seconds a slot may be late and still fire"
    )
    loop.add_argument("--max-running", type=int, default=4, help="runs at once at most")
    loop.add_argument("--once", action="store_true", help="one tick, wait for its runs, exit")
    loop.add_argument(
        "--at",
        metavar="ISO-8601",
        help="with --once: tick as if it were this instant (replays, tests), e.g. "
        "2030-01-01T09:00:05Z",
    )
    loop.add_argument(
        "--in-process",
        action="store_true",
        help="on Postgres: run slots in this process instead of queueing them for "
        "flowcore worker (the default when the queue extra is installed)",
    )
    model_options(loop)


def _need_cronsim() -> None:
    if importlib.util.find_spec("cronsim") is None:
        raise CliError(
            "schedules need the schedules extra (cronsim is missing): "
            "pip install 'flowcore[schedules]'"
        )


def _target(args: argparse.Namespace) -> DatabaseTarget:
    database = getattr(args, "database", None)
    return database if database is not None else DatabaseTarget("sqlite", str(args.db))


@contextlib.asynccontextmanager
async def _open(
    args: argparse.Namespace,
) -> AsyncIterator[tuple[Workspace, SqliteScheduleStore | PostgresScheduleStore]]:
    # The workspace first: its checkpointer refuses a file holding only other tables.
    async with (
        open_workspace(
            args.db, redactor=getattr(args, "redactor", None), database=args.database
        ) as ws,
        open_schedule_store(_target(args)) as store,
    ):
        yield ws, store


def _local(when: datetime | None, schedule: Schedule) -> str:
    if when is None:
        return "-"
    return when.astimezone(schedule.spec.zone).strftime("%Y-%m-%d %H:%M %Z")


def _row(schedule: Schedule, now: datetime) -> dict[str, Any]:
    upcoming = next_slot(schedule, max(now, datetime.fromtimestamp(schedule.cursor, UTC)))
    return {
        "id": schedule.schedule_id,
        "user": schedule.user_id,
        "target": schedule.target_id,
        "cron": schedule.spec.cron_expression,
        "timezone": schedule.spec.timezone,
        "description": schedule.spec.human_readable,
        "missed": schedule.missed,
        "enabled": schedule.enabled,
        "next": _local(upcoming, schedule) if schedule.enabled else "-",
    }


async def cmd_schedule(args: argparse.Namespace, out: TextIO) -> int:
    """Add, list, remove, enable, disable schedules, or show the slots one fired."""
    _need_cronsim()
    action = args.schedule_command
    extra = read_blocks(args.blocks) if action == "add" else []
    if action == "add":
        definition = await checked_definition(args, extra)
        made = new_schedule(
            definition,
            cron=args.cron,
            timezone=args.timezone,
            description=args.description,
            user_id=args.user,
            inputs=parse_inputs(args.input),
            schedule_id=args.schedule_id,
            missed=args.missed,
            enabled=not args.disabled,
        )
    async with _open(args) as (ws, store):
        now = datetime.now(UTC)
        if action == "add":
            if extra:
                # As 'flowcore run --blocks' does: the runs will need them in the registry.
                await ws.blocks.import_json(
                    json.dumps(
                        {
                            "format": "flowcore-blocks",
                            "blocks": [b.model_dump(mode="json") for b in extra],
                        }
                    )
                )
            added = await store.add(made)
            row = _row(added, now)
            if args.json:
                out.write(json.dumps(row) + "\n")
            else:
                out.write(
                    f"added schedule {added.schedule_id}: {added.target_id} for user "
                    f"{added.user_id or '-'}, {added.spec.human_readable} "
                    f"({added.spec.cron_expression} {added.spec.timezone}); next: {row['next']}\n"
                )
            return 0
        if action == "list":
            rows = [_row(s, now) for s in await store.list(user_id=args.user)]
            if args.json:
                out.write(json.dumps(rows) + "\n")
            elif rows:
                keys = ("id", "user", "target", "cron", "timezone", "missed", "enabled", "next")
                shown = [[r[k] if r[k] is not None else "-" for k in keys] for r in rows]
                out.write(table([k.upper() for k in keys], shown) + "\n")
            else:
                out.write("no schedules yet; add one with 'flowcore schedule add FILE.json'\n")
            return 0
        if action == "remove":
            if not await store.remove(args.schedule_id):
                await store.get(args.schedule_id)  # raises the not-found error
            out.write(f"removed schedule {args.schedule_id}\n")
            return 0
        if action in ("enable", "disable"):
            changed = await store.set_enabled(args.schedule_id, action == "enable", now=time.time())
            out.write(
                f"schedule {changed.schedule_id} {action}d; next: {_row(changed, now)['next']}\n"
            )
            return 0
        schedule = await store.get(args.schedule_id)
        claims = await store.slots(args.schedule_id, limit=args.limit)
        data = [
            {
                "slot": _local(c.slot_time, schedule),
                "kind": c.kind,
                "missed": c.missed,
                "run_id": c.run_id,
                "status": c.status,
                "by": c.claimed_by,
            }
            for c in claims
        ]
        if args.json:
            out.write(json.dumps(data) + "\n")
        elif data:
            columns = ("slot", "kind", "missed", "run_id", "status", "by")
            cells = [[short(d[k] if d[k] is not None else "-", 40) for k in columns] for d in data]
            out.write(table([k.upper() for k in columns], cells) + "\n")
        else:
            out.write(f"schedule {args.schedule_id} has fired no slot yet\n")
        return 0


def _clock(args: argparse.Namespace) -> ManualClock | None:
    if args.at is None:
        return None
    if not args.once:
        raise CliError("the option --at needs --once: it sets the time of a single tick")
    try:
        when = datetime.fromisoformat(args.at.replace("Z", "+00:00"))
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise CliError(
            f"--at {args.at!r} is not an ISO-8601 instant with a timezone; "
            "write e.g. 2030-01-01T09:00:05Z or 2030-01-01T10:00:05+01:00"
        )
    return ManualClock(when)


def _queue_app(args: argparse.Namespace) -> Any:
    """On Postgres with the queue extra (and no --in-process): a procrastinate app, else None."""
    target = _target(args)
    if target.kind != "postgres" or args.in_process:
        return None
    if importlib.util.find_spec("procrastinate") is None:
        return None  # no queue installed: the slots run here, as on SQLite
    from flowcore.queue.app import build_app

    return build_app(str(target.location), max_connections=2)


async def cmd_scheduler(args: argparse.Namespace, out: TextIO) -> int:
    """Run the scheduler loop on the database until SIGTERM or Ctrl-C (or one tick)."""
    _need_cronsim()
    clock = _clock(args)
    provider, choice = choose_provider(args.provider, args.model)
    tools = load_tools(args.tools)
    async with _open(args) as (ws, store), contextlib.AsyncExitStack() as stack:

        def ran(due: DueSlot, result: RunResult) -> None:
            out.write(
                f"fired {due.claim.schedule_id} slot {_local(due.claim.slot_time, due.schedule)} "
                f"({due.claim.kind}) -> run {result.run_id} {result.status} "
                f"(thread {result.thread_id})\n"
            )
            out.flush()

        sink: SlotSink = RunnerSink(ws.runner(provider, choice.model, tools), store, on_run=ran)
        app = _queue_app(args)
        if app is not None:
            # Postgres with the queue installed: claimed slots become jobs flowcore worker runs.
            from flowcore.queue.slots import QueueSlotSink
            from flowcore.queue.tables import QueueTables

            await stack.enter_async_context(QueueTables(str(_target(args).location)))  # schema
            await stack.enter_async_context(app.open_async())
            sink = QueueSlotSink(app)

        def failed(due: DueSlot, exc: BaseException) -> None:
            out.write(
                f"slot {_local(due.claim.slot_time, due.schedule)} of schedule "
                f"{due.claim.schedule_id} failed: {type(exc).__name__}: {one_line(str(exc))}\n"
            )
            out.flush()

        scheduler = Scheduler(
            store,
            sink,
            clock=clock,
            poll_interval=args.poll,
            grace=args.grace,
            max_running=args.max_running,
            on_error=failed,
            on_tick_error=lambda exc: out.write(
                f"tick failed, trying again in {args.poll:g}s: {one_line(str(exc))}\n"
            ),
        )
        enabled = await store.list(enabled=True)
        out.write(
            f"flowcore scheduler {scheduler.name} · db {ws.path} · model {choice.name}: "
            f"{choice.reason} · {len(enabled)} enabled schedule(s) · slots "
            f"{'queued for flowcore worker' if app is not None else 'run in this process'}\n"
        )
        out.flush()
        if args.once:
            await scheduler.tick(wait=True)
        else:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGTERM, stop.set)
            try:
                await scheduler.run(stop=stop)
            finally:
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(signal.SIGTERM)
        out.write(f"scheduler stopped: {scheduler.fired} fired, {scheduler.failed} failed\n")
        return 0 if scheduler.failed == 0 else 1


SCHEDULE_COMMANDS = {"schedule": cmd_schedule, "scheduler": cmd_scheduler}
