"""``flowcore create`` and ``flowcore automate``: the Thinker at the terminal.

``create`` turns an intent into a pipeline file: the Clarifier's questions
are asked in the terminal (answers read from stdin, one line each), the
Thinker's progress is printed stage by stage, created blocks are saved in
the database's registry, and the pipeline is written to a JSON file that
``flowcore run`` runs. ``automate`` does the same, then runs the pipeline
on the ``--input`` values. With no API key the Thinker's offline model
answers (see :class:`~flowcore.thinker.ThinkerModel`). Both work on the
CLI's database: the SQLite file, or Postgres when ``FLOWCORE_DATABASE_URL``
names one (blocks, the Thinker's checkpoints and the runs all go there; the
block search is then Postgres' full text).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

from flowcore.cli.commands import RunInputError, _finish, parse_inputs
from flowcore.cli.render import ProgressPrinter, short
from flowcore.cli.workspace import CliError, Workspace, choose_provider, load_tools, open_workspace
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.runner import check_run_inputs, input_keys
from flowcore.port.inproc import InProcExecutor
from flowcore.thinker.api import Thinker
from flowcore.thinker.events import ThinkerEvent
from flowcore.thinker.setup import default_search, thinker_model

__all__ = ["THINKER_COMMANDS", "add_thinker_commands"]

EXIT_OK, EXIT_FAILED = 0, 1


def add_thinker_commands(command: Any) -> None:
    """Add ``create`` and ``automate`` through the parser's ``command(name, help)`` helper.

    Example:
        >>> # add_thinker_commands(command)  # inside flowcore.cli.app.build_parser
    """
    for name, text in (
        ("create", "turn an intent into a tested pipeline file (asks clarifying questions)"),
        ("automate", "create a pipeline for an intent, then run it"),
    ):
        p: argparse.ArgumentParser = command(name, text)
        p.add_argument("intent", help="what to automate, in plain words")
        p.add_argument(
            "--output",
            "-o",
            metavar="FILE.json",
            help="where to write the pipeline (default: <pipeline id>.json)",
        )
        p.add_argument(
            "--no-clarify",
            action="store_true",
            help="build from the intent as written, asking no questions",
        )
        p.add_argument("--user", help="the user the pipeline is for")
        p.add_argument("--thread", help="the Thinker's thread id (default: new)")
        p.add_argument("--provider", choices=("offline", "openai", "anthropic", "local"))
        p.add_argument("--model", help="the model name (default: $FLOWCORE_MODEL or per provider)")
        if name == "automate":
            p.add_argument(
                "--input",
                action="append",
                default=[],
                metavar="KEY=VALUE|@FILE.json",
                help="a run input of the created pipeline; repeatable",
            )


def _thinker(args: argparse.Namespace, ws: Workspace, out: TextIO) -> Thinker:
    provider, choice = choose_provider(args.provider, args.model)
    runner = ws.runner(thinker_model(provider), choice.model, load_tools([]))
    if not args.json:
        model = f" ({choice.model})" if choice.model else ""
        out.write(
            f"flowcore {args.command} · model {choice.name}{model}: {choice.reason} · "
            f"db {ws.path}\n"
        )
    return Thinker(
        ws.blocks,
        runner.executor,
        default_search(ws.blocks),
        ws.checkpoints,
        runner=runner,
        # Thinker runs are recorded like any run: 'flowcore runs list' shows their tokens.
        port=InProcExecutor(history=ws.history),
    )


def _line(event: ThinkerEvent) -> str | None:
    kind = event["type"]
    if kind == "stage":
        return f"== {event['stage']}"
    if kind == "validation" and not event.get("ok"):
        return (
            f"   {event['stage']} answer refused ({len(event['problems'])} problem(s)): "
            + short(event["problems"][0], 100)
        )
    if kind == "decompose_blocks":
        return "   blocks needed: " + ", ".join(b["suggested_id"] for b in event["blocks"])
    if kind == "search_found":
        return f"   found {event['block_id']} v{event['block_version']} for {event['suggested_id']}"
    if kind == "search_missing":
        return f"   missing {event['suggested_id']}: will create it"
    if kind == "block_test_passed":
        return f"   {event['block_id']}: test passed"
    if kind == "block_created":
        block = event["block"]
        return f"   saved {block['id']} v{block['version']} (created_by {block['created_by']})"
    if kind == "block_create_failed":
        return f"   could not create {event['suggested_id']} in {event['attempts']} attempt(s)"
    if kind == "error":
        return f"   error: {short(event['message'], 120)}"
    return None


async def _answers() -> str:
    line = await asyncio.to_thread(sys.stdin.readline)
    if not line:
        raise CliError(
            "no answer to the question (stdin is closed); answer it in a terminal, or pass "
            "--no-clarify to build from the intent as written"
        )
    return str(line).strip()


async def _create(args: argparse.Namespace, ws: Workspace, out: TextIO) -> dict[str, Any]:
    thinker = _thinker(args, ws, out)
    events: AsyncIterator[ThinkerEvent] = thinker.stream_create(
        args.intent, user_id=args.user, thread_id=args.thread, clarify=not args.no_clarify
    )
    while True:
        result: dict[str, Any] = {}
        thread = args.thread
        async for event in events:
            if event["type"] == "start":
                thread = event.get("thread_id") or thread
            if not args.json and (line := _line(event)) is not None:
                out.write(line + "\n")
                out.flush()
            if event["type"] == "complete":
                result = event["result"]
        if result.get("status") != "needs_input":
            return result
        answer = ""
        # With --json, stdout carries only the result document: questions go to stderr.
        ask = sys.stderr if args.json else out
        while not answer:
            ask.write(f"? {result.get('question')}\n> ")
            ask.flush()
            answer = await _answers()
            if not args.json and not sys.stdin.isatty():
                # A terminal echoes what is typed; piped answers are shown like typed ones.
                out.write(f"{answer}\n")
        assert thread is not None
        events = thinker.stream_answer(thread, answer, user_id=args.user)


def _save(args: argparse.Namespace, pipeline: dict[str, Any]) -> Path:
    path = Path(args.output or f"{pipeline['id']}.json")
    try:
        path.write_text(json.dumps(pipeline, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {str(path)!r}: {exc.strerror}") from None
    return path


async def cmd_create(args: argparse.Namespace, out: TextIO) -> int:
    """Create a pipeline file for an intent."""
    async with open_workspace(
        args.db, redactor=getattr(args, "redactor", None), database=getattr(args, "database", None)
    ) as ws:
        result = await _create(args, ws, out)
    if result.get("status") != "complete" or not result.get("pipeline_json"):
        if args.json:
            out.write(json.dumps(result, indent=2, default=str) + "\n")
        else:
            out.write(
                "\nno pipeline: " + "; ".join(result.get("log") or ["the Thinker failed"]) + "\n"
            )
        return EXIT_FAILED
    pipeline = result["pipeline_json"]
    path = await asyncio.to_thread(_save, args, pipeline)
    if args.json:
        out.write(json.dumps({**result, "file": str(path)}, indent=2, default=str) + "\n")
        return EXIT_OK
    keys = input_keys(Pipeline.from_data(pipeline))
    out.write(
        f"\npipeline {pipeline['id']} ({len(pipeline['nodes'])} nodes) saved to {path}\n"
        f"reused: {', '.join(result.get('reused') or []) or '-'} · "
        f"created: {', '.join(result.get('created') or []) or '-'}\n"
        f"run it with: flowcore run {path} " + " ".join(f"--input {k}=..." for k in keys) + "\n"
    )
    return EXIT_OK


async def cmd_automate(args: argparse.Namespace, out: TextIO) -> int:
    """Create a pipeline for an intent, then run it on the given inputs."""
    inputs = parse_inputs(args.input)
    async with open_workspace(
        args.db, redactor=getattr(args, "redactor", None), database=getattr(args, "database", None)
    ) as ws:
        result = await _create(args, ws, out)
        if result.get("status") != "complete" or not result.get("pipeline_json"):
            out.write(
                "\nno pipeline: " + "; ".join(result.get("log") or ["the Thinker failed"]) + "\n"
            )
            return EXIT_FAILED
        pipeline = Pipeline.from_data(result["pipeline_json"])
        if args.output:
            await asyncio.to_thread(_save, args, result["pipeline_json"])
        problems = check_run_inputs(pipeline, inputs)
        if problems:
            raise RunInputError(pipeline.id, problems)
        provider, choice = choose_provider(args.provider, args.model)
        runner = ws.runner(provider, choice.model, load_tools([]))
        if not args.json:
            out.write(f"\n== run {pipeline.id}\n")
        printer = None if args.json else ProgressPrinter(out)
        run = await runner.run(pipeline, inputs, user_id=args.user, on_event=printer)
        return await _finish(args, out, ws, run)


THINKER_COMMANDS = {"create": cmd_create, "automate": cmd_automate}
