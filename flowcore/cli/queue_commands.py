"""The CLI's queue commands: ``flowcore worker`` and ``flowcore submit``.

Both need ``FLOWCORE_DATABASE_URL=postgresql://...`` (the queue lives in
Postgres) and ``pip install 'flowcore[queue]'``.

``flowcore worker`` executes queued runs until SIGTERM or Ctrl-C (runs in
progress are stopped and re-queued, to resume from their last checkpoint on
another worker). ``flowcore submit FILE.json`` queues a run of a pipeline or
task plan file (the document travels with the job) or, with ``--graph NAME``,
of a graph the workers registered; ``--wait`` follows it to its end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import uuid
from typing import Any, TextIO

from flowcore.cli.commands import _value, checked_definition, parse_inputs, read_blocks
from flowcore.cli.render import one_line
from flowcore.cli.workspace import CliError, Workspace, choose_provider, load_tools
from flowcore.port.protocol import UNSET, Caller, RunOptions, RunRequest
from flowcore.queue.errors import QueueConfigError
from flowcore.queue.jobs import STRATEGIES, check_strategy
from flowcore.secrets import NO_REDACTION

__all__ = ["QUEUE_COMMANDS", "add_queue_commands"]

EXIT_OK, EXIT_FAILED = 0, 1


def add_queue_commands(command: Any) -> None:
    """Declare ``worker`` and ``submit`` with the parser's ``command(name, help)`` maker.

    Example:
        >>> # add_queue_commands(command)
    """
    worker = command("worker", "execute queued runs (needs FLOWCORE_DATABASE_URL=postgresql://)")
    worker.add_argument("--concurrency", type=int, default=4, help="runs at once (default 4)")
    worker.add_argument(
        "--graphs",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="register graphs the queue can run by name (as for flowcore serve; repeatable)",
    )
    worker.add_argument(
        "--heartbeat", type=float, default=2.0, help="seconds between heartbeats (default 2)"
    )
    worker.add_argument(
        "--stalled-after",
        type=float,
        default=10.0,
        help="seconds without heartbeat before a worker's runs are re-queued (default 10)",
    )
    worker.add_argument(
        "--lease-ttl",
        type=float,
        default=10.0,
        help="seconds a crashed run keeps its thread (default 10)",
    )
    worker.add_argument("--name", help="the worker's name in logs (default: host and pid)")
    worker.add_argument(
        "--no-schedules",
        action="store_true",
        help="do not fire due schedule slots from this worker (by default every worker ticks "
        "the schedules when the schedules extra is installed; each slot still fires once)",
    )
    worker.add_argument(
        "--init-schema",
        action="store_true",
        help="create the queue's tables (and procrastinate's) and exit; workers and "
        "submitters also create them on first use",
    )
    for flag, help_text in (
        ("--provider", "the model provider for LLM blocks (as for flowcore run)"),
        ("--model", "the model name"),
    ):
        worker.add_argument(flag, help=help_text)
    worker.add_argument("--tools", action="append", default=[], metavar="FILE.py")

    submit = command("submit", "queue a run for the workers (needs FLOWCORE_DATABASE_URL)")
    submit.add_argument("file", metavar="FILE.json", nargs="?", help="a pipeline or task plan")
    submit.add_argument("--graph", help="instead of FILE.json: a graph the workers registered")
    submit.add_argument("--input", action="append", default=[], metavar="KEY=VALUE|@FILE.json")
    submit.add_argument("--user", help="the user the run is for")
    submit.add_argument("--thread", help="the thread to run on (default: a new one)")
    submit.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="enqueue",
        help="when the thread is busy: reject, enqueue (default), interrupt or rollback",
    )
    submit.add_argument(
        "--resume",
        metavar="VALUE",
        help="answer the paused --thread's question instead of starting a run (JSON or text)",
    )
    submit.add_argument("--wait", action="store_true", help="follow the run to its end")
    submit.add_argument("--blocks", action="append", default=[], metavar="FILE.json")
    submit.add_argument("--recursion-limit", type=int, help="maximum supersteps of the run")


def _queue_url(args: argparse.Namespace, what: str) -> str:
    target = getattr(args, "database", None)
    if target is None or target.kind != "postgres":
        raise QueueConfigError(
            f"'flowcore {what}' needs a Postgres database: set FLOWCORE_DATABASE_URL="
            "postgresql://user:password@host:5432/dbname (the queue, its runs' events and "
            "their threads live there; an SQLite file cannot be shared by worker processes)"
        )
    from flowcore.queue.app import require_procrastinate

    require_procrastinate(f"'flowcore {what}'")
    return str(target.location)


async def cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    """Execute queued runs until SIGTERM or Ctrl-C."""
    url = _queue_url(args, "worker")
    from flowcore.port.inproc import InProcExecutor
    from flowcore.queue.worker import QueueWorker
    from flowcore.server.serve import load_graphs
    from flowcore.storage import Backends

    if args.init_schema:
        from flowcore.queue.tables import QueueTables

        async with QueueTables(url):
            pass
        out.write(f"queue tables ready in {args.database.display}\n")
        return EXIT_OK
    provider, choice = choose_provider(args.provider, args.model)
    tools = load_tools(args.tools)
    redactor = getattr(args, "redactor", None)

    def build(backends: Backends) -> InProcExecutor:
        ws = Workspace(
            backends.target.display,
            backends.blocks,
            backends.memory,
            backends.checkpoints,
            backends.history,
            redactor,
        )
        graphs = load_graphs(args.graphs, backends.checkpoints)
        return InProcExecutor(
            graphs=graphs,
            runner=ws.runner(provider, choice.model, tools),
            history=backends.history,
            redactor=redactor or NO_REDACTION,
        )

    try:
        worker = QueueWorker(
            url,
            build,
            concurrency=args.concurrency,
            heartbeat=args.heartbeat,
            stalled_after=args.stalled_after,
            lease_ttl=args.lease_ttl,
            name=args.name,
            schedules=False if args.no_schedules else None,
        )
    except QueueConfigError as exc:
        raise CliError(str(exc).replace("concurrency", "--concurrency")) from None
    load_graphs(args.graphs, None)  # type: ignore[arg-type]  # bad --graphs fail now, in one line
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, worker.stop)
    out.write(
        f"flowcore worker {worker.name} · concurrency {args.concurrency} · "
        f"db {args.database.display} · model {choice.name} · "
        f"graphs: {', '.join(args.graphs) or 'none'} · "
        f"schedules: {'fired here too' if worker.schedules else 'not fired here'}\n"
    )
    out.flush()
    try:
        await worker.run()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    out.write(f"flowcore worker {worker.name} stopped\n")
    return EXIT_OK


async def cmd_submit(args: argparse.Namespace, out: TextIO) -> int:
    """Queue a run of a pipeline file (or a registered graph); ``--wait`` follows it."""
    url = _queue_url(args, "submit")
    from flowcore.queue.executor import QueueExecutor

    if (args.file is None) == (args.graph is None):
        raise CliError("give a pipeline FILE.json or --graph NAME (one of the two)")
    inputs = parse_inputs(args.input)
    target: Any = args.graph
    if args.file is not None:
        target = await checked_definition(args, read_blocks(args.blocks))
    strategy = check_strategy(args.strategy)
    resume: Any = UNSET
    if args.resume is not None:
        if args.thread is None:
            raise CliError("--resume answers a paused thread: pass its --thread too")
        if inputs:
            raise CliError("--resume continues a thread with an answer; drop --input")
        resume = _value(args.resume)
    tag = uuid.uuid4().hex[:12]
    request = RunRequest(
        target=target,
        input=None if resume is not UNSET else (inputs or None),
        caller=Caller(request_id=f"cli-{tag}", trace_id=f"cli-{tag}", user_id=args.user),
        options=RunOptions(
            thread_id=args.thread, resume=resume, recursion_limit=args.recursion_limit
        ),
    )
    async with QueueExecutor(url) as executor:
        handle = await executor.submit(request, strategy=strategy)
        if not args.wait:
            if args.json:
                out.write(json.dumps({"run_id": handle.run_id, "thread_id": args.thread}) + "\n")
            else:
                out.write(
                    f"queued run {handle.run_id}"
                    + (f" on thread {args.thread}" * bool(args.thread))
                    + "\n"
                )
            return EXIT_OK
        if not args.json:
            out.write(f"queued run {handle.run_id}; waiting for a worker\n")
            out.flush()
        async for event in handle:
            if args.json:
                continue
            node = getattr(event, "node", None)
            if event.type in ("node_start", "node_end", "node_error", "interrupt"):
                out.write(f"  {event.type:<10} {node}\n")
            elif event.type == "error":
                out.write(f"  error      {one_line(str(getattr(event, 'message', '')))}\n")
            out.flush()
        outcome = await handle.final
    if args.json:
        from flowcore.queue.app import outcome_to_json

        out.write(json.dumps(outcome_to_json(outcome), ensure_ascii=False) + "\n")
    else:
        out.write(f"run {outcome.run_id} {outcome.status}")
        out.write(f" on thread {outcome.thread_id}\n" if outcome.thread_id else "\n")
        if outcome.error:
            out.write(f"error: {one_line(outcome.error)}\n")
    return EXIT_OK if outcome.status in ("completed", "interrupted") else EXIT_FAILED


QUEUE_COMMANDS = {"worker": cmd_worker, "submit": cmd_submit}
