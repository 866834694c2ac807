"""The CLI's commands: run, resume, validate, graph, blocks ..., runs ...

Each command is a coroutine taking the parsed arguments and the output
stream and returning the exit code. Problems with what the user typed are
raised as flowcore errors; :mod:`flowcore.cli.app` turns them into one line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from flowcore.blocks.definition import BlockDefinition
from flowcore.cli.render import ProgressPrinter, one_line, record_to_json, short, table
from flowcore.cli.workspace import (
    CliError,
    OverlayBlockStore,
    Workspace,
    choose_provider,
    load_tools,
    open_registry,
    open_workspace,
)
from flowcore.errors import BlockDefinitionError, InvalidInputError
from flowcore.history import RunNotFoundError, RunRecord
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan, as_pipeline
from flowcore.pipeline.runner import check_run_inputs, check_run_request
from flowcore.pipeline.validation import load_checked_definition, validate_definition
from flowcore.result import RunResult

__all__ = ["COMMANDS"]

# Exit codes: 0 completed (or paused for a human), 1 the run failed, 2 bad input.
EXIT_OK, EXIT_FAILED = 0, 1


class RunInputError(InvalidInputError):
    """The run input does not fit the pipeline; ``problems`` lists each mismatch.

    Example:
        >>> RunInputError("p", ["input 'a' is missing"]).problems
        ("input 'a' is missing",)
    """

    def __init__(self, pipeline: str, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        where = f"run input of pipeline {pipeline!r}"
        if len(self.problems) == 1:
            super().__init__(f"{where}: {self.problems[0]}")
        else:
            listed = "\n".join(f"  - {p}" for p in self.problems)
            super().__init__(f"{where} has {len(self.problems)} problems:\n{listed}")


# ------------------------------------------------------------------ reading files
def _read_json(path: str, what: str) -> Any:
    text = _read_text(path, what)
    try:
        return _json(text)
    except ValueError as exc:
        raise CliError(f"{what} file {path!r} is not valid JSON: {exc}") from None


def _json(text: str) -> Any:
    """``json.loads``, with every way it can refuse text raised as a ValueError that says why."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(
            "it nests arrays or objects too deeply to read; flatten the nested value"
        ) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an int with more digits than Python turns into a number
        raise ValueError(f"{exc}; write such a number as a string") from None


async def checked_definition(
    args: argparse.Namespace, extra: Sequence[BlockDefinition]
) -> Pipeline | TaskPlan:
    """The definition in ``args.file``, refused with every problem of every stage at once.

    Blocks come from ``extra`` (``--blocks`` files) over the registry; the
    database is read, never created, so a refused file leaves nothing behind.
    """
    data = _read_json(args.file, "pipeline")
    async with open_registry(args.db, getattr(args, "database", None)) as registry:
        return await load_checked_definition(data, OverlayBlockStore(registry, extra))


def read_blocks(paths: Sequence[str]) -> list[BlockDefinition]:
    """Block definitions from files: an export document, a list, or one block."""
    blocks: list[BlockDefinition] = []
    for path in paths:
        data = _read_json(path, "blocks")
        items = data.get("blocks") if isinstance(data, dict) and "blocks" in data else data
        for item in items if isinstance(items, list) else [items]:
            try:
                blocks.append(BlockDefinition.from_data(item))
            except BlockDefinitionError as exc:
                raise CliError(f"blocks file {path!r}: {one_line(str(exc))}") from None
    return blocks


def _read_text(path: str, what: str) -> str:
    file = Path(path)
    if not file.is_file():
        raise CliError(f"{what} file {path!r} does not exist")
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{what} file {path!r} is not UTF-8 text") from None
    except OSError as exc:
        raise CliError(f"cannot read {what} file {path!r}: {exc.strerror or exc}") from None


def _write_text(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {path!r}: {exc.strerror}") from None


def _value(text: str) -> Any:
    """``@file.json`` -> its JSON, JSON text -> its value, anything else -> the string."""
    if text.startswith("@"):
        return _read_json(text[1:], "value")
    try:
        return _json(text)
    except json.JSONDecodeError:
        return text
    except ValueError as exc:  # JSON, but not JSON flowcore can read
        raise CliError(f"value {short(text, 40)!r} is JSON that cannot be read: {exc}") from None


def parse_inputs(items: Sequence[str]) -> dict[str, Any]:
    """``--input k=v`` (v parsed as JSON when it is JSON) and ``--input @file.json``."""
    inputs: dict[str, Any] = {}
    for item in items:
        if item.startswith("@"):
            data = _read_json(item[1:], "input")
            if not isinstance(data, dict):
                raise CliError(f"input file {item[1:]!r} must hold a JSON object of inputs")
            inputs.update(data)
        elif "=" in item:
            key, _, raw = item.partition("=")
            if not key:
                raise CliError(f"--input {item!r} has no key; write --input key=value")
            inputs[key] = _value(raw)
        else:
            raise CliError(f"--input {item!r} must be key=value or @file.json")
    return inputs


def _dump(out: TextIO, data: Any) -> None:
    out.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")


# ------------------------------------------------------------------- run / resume
def _question(value: Any) -> Any:
    question = value.get("question") if isinstance(value, dict) else None
    return question or value


def _summary(out: TextIO, record: RunRecord, result: RunResult) -> None:
    out.write("\n")
    pending = [(i.node, _question(i.value)) for i in result.interrupts]
    _summary_record(out, record, pending)
    if result.status == "interrupted" and result.thread_id:
        for node, question in pending:
            out.write(f"waiting for an answer from node {node}: {question}\n")
        out.write(f"resume with: flowcore resume {result.thread_id} --value '<answer>'\n")


async def _finish(args: argparse.Namespace, out: TextIO, ws: Workspace, result: RunResult) -> int:
    record = await ws.history.get(result.run_id)
    if args.json:
        data = record_to_json(record)
        data["interrupts"] = [
            {"id": i.id, "node": i.node, "value": i.value} for i in result.interrupts
        ]
        data["final_state"] = result.state.get("shared_context", {})
        _dump(out, data)
    else:
        _summary(out, record, result)
    return EXIT_OK if result.status in ("completed", "interrupted") else EXIT_FAILED


async def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    """Run a pipeline or task plan file."""
    inputs = parse_inputs(args.input)
    extra = read_blocks(args.blocks)
    definition = await checked_definition(args, extra)
    tools = load_tools(args.tools)
    provider, choice = choose_provider(args.provider, args.model)
    async with open_workspace(
        args.db, redactor=getattr(args, "redactor", None), database=getattr(args, "database", None)
    ) as ws:
        overlay = OverlayBlockStore(ws.blocks, extra)
        runner = ws.runner(provider, choice.model, tools, overlay)
        # Everything is checked before anything is written.
        pipeline = as_pipeline(definition)
        await runner.compile(pipeline)
        check_run_request(pipeline, inputs, user_id=args.user, thread_id=args.thread)
        problems = check_run_inputs(pipeline, inputs)
        if problems:
            raise RunInputError(pipeline.id, problems)
        if extra:
            await _check_edited_blocks(ws, extra)
            await ws.blocks.import_json(
                json.dumps(
                    {
                        "format": "flowcore-blocks",
                        "blocks": [b.model_dump(mode="json") for b in extra],
                    }
                )
            )
        if not args.json:
            model = f" ({choice.model})" if choice.model else ""
            out.write(
                f"flowcore run {pipeline.id} v{pipeline.version} · user {args.user or '-'} · "
                f"model {choice.name}{model}: {choice.reason} · db {ws.path}\n"
            )
        printer = None if args.json else ProgressPrinter(out)
        result = await runner.run(
            definition,
            inputs,
            user_id=args.user,
            thread_id=args.thread,
            on_event=printer,
            recursion_limit=args.recursion_limit,
        )
        return await _finish(args, out, ws, result)


async def _check_edited_blocks(ws: Workspace, extra: Sequence[BlockDefinition]) -> None:
    """Refuse a ``--blocks`` block edited in place: its version is taken by the old content.

    The run history names blocks by id and version, so one number must not
    stand for two definitions; the message says the two ways to go on.
    """
    for block in extra:
        try:
            stored = await ws.blocks.get(block.id, block.version)
        except LookupError:
            continue
        if stored.model_dump(exclude={"version"}) != block.model_dump(exclude={"version"}):
            latest = await ws.blocks.get(block.id)
            raise CliError(
                f"block {block.id!r} of the --blocks file differs from version {block.version} "
                f"already in {ws.path}; after editing a block, either give it the next version "
                f'in the file ("version": {latest.version + 1}), or save it with '
                "'flowcore blocks add FILE.json', which stores it as the next version, and run "
                "without --blocks"
            )


async def cmd_resume(args: argparse.Namespace, out: TextIO) -> int:
    """Resume a paused (or failed) run by its thread id."""
    tools = load_tools(args.tools)
    provider, choice = choose_provider(args.provider, args.model)
    value = _value(args.value) if args.value is not None else None
    async with open_workspace(
        args.db, redactor=getattr(args, "redactor", None), database=getattr(args, "database", None)
    ) as ws:
        runner = ws.runner(provider, choice.model, tools)
        latest = await ws.history.list(thread_id=args.thread, limit=1)
        if not latest:
            raise CliError(
                f"no run on thread {args.thread!r} in {ws.path}; "
                "'flowcore runs list' shows the threads"
            )
        if latest[0].source is None:
            # A graph run an app recorded (through the executor port): no pipeline
            # document to rebuild it from, so only that app can resume it.
            raise CliError(
                f"thread {args.thread!r} belongs to a run of graph {latest[0].pipeline_id!r} "
                "that an app recorded, not to a pipeline file; resume it from that app, "
                "e.g. RunRequest(..., options=RunOptions(thread_id=..., resume=...))"
            )
        # The engine's own refusals name Python calls; on the command line, name the options.
        if latest[0].status == "completed":
            raise CliError(
                f"thread {args.thread!r} has finished its run (completed), so there is nothing "
                f"to resume; start another run on it with 'flowcore run FILE.json --thread "
                f"{args.thread}'"
            )
        if latest[0].status == "interrupted" and args.value is None:
            raise CliError(
                f"thread {args.thread!r} is waiting for an answer; pass it with "
                f"'flowcore resume {args.thread} --value ANSWER'"
            )
        if not args.json:
            out.write(
                f"flowcore resume {args.thread} · pipeline {latest[0].pipeline_id} · "
                f"model {choice.name}\n"
            )
        printer = None if args.json else ProgressPrinter(out)
        if args.value is None:
            result = await runner.resume(
                args.thread, on_event=printer, recursion_limit=args.recursion_limit
            )
        else:
            result = await runner.resume(
                args.thread, value, on_event=printer, recursion_limit=args.recursion_limit
            )
        return await _finish(args, out, ws, result)


async def cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    """Check a pipeline or task plan against the registry; list every problem of every stage.

    Python blocks are checked against the sandbox's policy too. The database
    is read, never created.
    """
    data = _read_json(args.file, "pipeline")
    extra = read_blocks(args.blocks)
    async with open_registry(args.db, getattr(args, "database", None)) as registry:
        store = OverlayBlockStore(registry, extra)
        definition, problems = await validate_definition(data, store, sandbox_policy=True)
    raw = data if isinstance(data, dict) else {}
    kind = "task plan" if isinstance(definition, TaskPlan) or "steps" in raw else "pipeline"
    name = (
        as_pipeline(definition).id
        if definition is not None
        else str(raw.get("id") or raw.get("plan_id") or args.file)
    )
    steps = len(as_pipeline(definition).nodes) if definition is not None else 0
    if args.json:
        _dump(out, {"id": name, "kind": kind, "valid": not problems, "problems": problems})
    elif problems:
        out.write(f"{kind} {name!r} has {len(problems)} problem(s):\n")
        out.writelines(f"  - {p}\n" for p in problems)
    else:
        out.write(f"{kind} {name!r} is valid ({steps} steps)\n")
    return EXIT_OK if not problems else EXIT_FAILED


async def cmd_graph(args: argparse.Namespace, out: TextIO) -> int:
    """Print the compiled graph of a pipeline or task plan (the database is read, never created)."""
    from flowcore.blocks.executor import BlockExecutor
    from flowcore.pipeline.compiler import compile_pipeline

    extra = read_blocks(args.blocks)
    data = _read_json(args.file, "pipeline")
    async with open_registry(args.db, getattr(args, "database", None)) as registry:
        store = OverlayBlockStore(registry, extra)
        definition = await load_checked_definition(data, store)
        graph = await compile_pipeline(as_pipeline(definition), store, BlockExecutor())
    text = graph.to_mermaid()
    if args.json:
        _dump(out, {"format": "mermaid", "graph": text})
    else:
        out.write(text.rstrip("\n") + "\n")
    return EXIT_OK


# ------------------------------------------------------------------------ blocks
def _block_rows(blocks: Sequence[BlockDefinition]) -> list[list[Any]]:
    return [[b.id, b.version, b.kind, b.category or "-", short(b.name, 40)] for b in blocks]


async def cmd_blocks(args: argparse.Namespace, out: TextIO) -> int:
    """The block registry: list, show, add, search, export, import."""
    async with open_workspace(
        args.db, redactor=getattr(args, "redactor", None), database=getattr(args, "database", None)
    ) as ws:
        store = ws.blocks
        action = args.blocks_command
        if action in ("list", "search"):
            if action == "list":
                found = await store.list_blocks(category=args.category, tags=args.tag)
            else:
                found = await store.search(args.query, limit=args.limit)
            if args.json:
                _dump(out, [b.model_dump(mode="json") for b in found])
            elif found:
                out.write(table(["id", "version", "kind", "category", "name"], _block_rows(found)))
                out.write("\n")
            else:
                out.write("no blocks found\n")
        elif action == "show":
            block = await OverlayBlockStore(store, ()).get(args.id, args.version)
            _dump(out, block.model_dump(mode="json", exclude_none=True))
        elif action == "add":
            new = read_blocks([args.file])
            saved = [await store.save(b) for b in new]
            if args.json:
                _dump(out, [{"id": b.id, "version": b.version} for b in saved])
            else:
                out.writelines(f"saved {b.id} v{b.version}\n" for b in saved)
        elif action == "export":
            text = await store.export_json()
            if args.output:
                await asyncio.to_thread(_write_text, args.output, text + "\n")
                out.write(f"exported to {args.output}\n")
            else:
                out.write(text + "\n")
        else:  # import
            text = await asyncio.to_thread(_read_text, args.file, "blocks")
            try:
                _json(text)  # JSON too deep or with too long ints: one line, not a crash
            except json.JSONDecodeError:
                pass  # the store names what is wrong with it
            except ValueError as exc:
                raise CliError(f"blocks file {args.file!r} is not valid JSON: {exc}") from None
            added = await store.import_json(text)
            if args.json:
                _dump(out, {"added": added})
            else:
                out.write(f"imported {added} block version(s) from {args.file}\n")
    return EXIT_OK


# -------------------------------------------------------------------------- runs
async def cmd_runs(args: argparse.Namespace, out: TextIO) -> int:
    """The run history: list and show."""
    async with open_workspace(
        args.db, redactor=getattr(args, "redactor", None), database=getattr(args, "database", None)
    ) as ws:
        if args.runs_command == "list":
            records = await ws.history.list(
                pipeline_id=args.pipeline,
                user_id=args.user,
                status=args.status,
                thread_id=args.thread,
                limit=args.limit,
            )
            if args.json:
                _dump(out, [record_to_json(r) for r in records])
            elif not records:
                out.write("no runs recorded\n")
            else:
                rows = [
                    [
                        r.run_id,
                        r.pipeline_id,
                        r.user_id or "-",
                        r.thread_id or "-",
                        r.status,
                        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started_at)),
                        f"{r.duration:.2f}",
                        r.input_tokens + r.output_tokens,
                    ]
                    for r in records
                ]
                headers = ["run", "pipeline", "user", "thread", "status", "started", "s", "tokens"]
                out.write(table(headers, rows) + "\n")
        else:
            try:
                record = await ws.history.get(args.run_id)
            except RunNotFoundError:
                raise CliError(
                    f"no run {args.run_id!r} in {ws.path}; 'flowcore runs list' shows the "
                    "recorded runs (filter with --pipeline, --user, --status, --thread)"
                ) from None
            if args.json:
                _dump(out, record_to_json(record))
            else:
                out.write(
                    f"run {record.run_id} · pipeline {record.pipeline_id} "
                    f"v{record.pipeline_version} · user {record.user_id or '-'} · "
                    f"thread {record.thread_id or '-'} · inputs {short(record.inputs, 80)}\n"
                )
                _summary_record(out, record)
    return EXIT_OK


def _summary_record(
    out: TextIO, record: RunRecord, pending: Sequence[tuple[str, Any]] = ()
) -> None:
    rows = [
        [
            n.node,
            n.status if n.pass_index <= 1 else f"{n.status} (pass {n.pass_index})",
            f"{n.duration * 1000:.0f}" if n.status != "skipped" else "-",
            n.input_tokens or "-",
            n.output_tokens or "-",
            short(n.error or n.skip_reason or n.outputs or "", 60),
        ]
        for n in record.nodes
    ]
    rows.extend([node, "paused", "-", "-", "-", short(question, 60)] for node, question in pending)
    out.write(table(["node", "status", "ms", "tok in", "tok out", "detail"], rows) + "\n\n")
    out.write(
        f"{record.status}: run {record.run_id} · {len(record.nodes)} node runs · "
        f"{record.duration:.2f} s · tokens {record.input_tokens} in / {record.output_tokens} out\n"
    )
    for error in record.errors:
        out.write(f"error: {short(error, 200)}\n")


COMMANDS = {
    "run": cmd_run,
    "resume": cmd_resume,
    "validate": cmd_validate,
    "graph": cmd_graph,
    "blocks": cmd_blocks,
    "runs": cmd_runs,
}
