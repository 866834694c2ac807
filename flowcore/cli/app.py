"""The ``flowcore`` command line: argument parsing, and one clear line for any mistake.

Secrets never reach the terminal: :func:`main` builds a redactor from the
environment and everything the command prints, logs or stores goes through
it (see :mod:`flowcore.cli.redaction`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from flowcore.cli.commands import COMMANDS
from flowcore.cli.create_commands import THINKER_COMMANDS, add_thinker_commands
from flowcore.cli.queue_commands import QUEUE_COMMANDS, add_queue_commands
from flowcore.cli.redaction import redacted_output
from flowcore.cli.render import one_line
from flowcore.cli.schedule_commands import SCHEDULE_COMMANDS, add_schedule_commands
from flowcore.cli.server_commands import SERVER_COMMANDS
from flowcore.cli.workspace import PROVIDERS, CliError, default_db_path
from flowcore.errors import FlowcoreError
from flowcore.secrets import SecretRedactor, scrub_error
from flowcore.storage import database_url_from_env

__all__ = ["build_parser", "main"]

EXIT_USAGE = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE: flowcore itself failed


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"flowcore: error: {message} (see {self.prog} --help)\n")


def _common(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: the same options may come before or after the command.
    parser.add_argument(
        "--db",
        type=Path,
        default=argparse.SUPPRESS,
        help="the database file (default: $FLOWCORE_DB or ~/.local/share/flowcore/flowcore.db)",
    )
    parser.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--provider",
        choices=PROVIDERS,
        help="the model provider (default: from OPENAI_API_KEY / ANTHROPIC_API_KEY / "
        "FLOWCORE_BASE_URL, else offline)",
    )
    parser.add_argument("--model", help="the model name (default: $FLOWCORE_MODEL or per provider)")
    parser.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="FILE.py",
        help="a Python file defining TOOLS = [Tool(...), ...] (repeatable)",
    )
    parser.add_argument("--recursion-limit", type=int, help="maximum supersteps of the run")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser of the ``flowcore`` command.

    Example:
        >>> build_parser().parse_args(["runs", "list"]).command
        'runs'
    """
    parser = _Parser(
        prog="flowcore",
        description="Run, inspect and manage flowcore pipelines, task plans and blocks.",
    )
    _common(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        _common(p)
        return p

    run = command("run", "run a pipeline or task plan JSON file")
    run.add_argument("file", metavar="FILE.json")
    run.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE|@FILE.json",
        help="a run input (VALUE is parsed as JSON when it is JSON); repeatable",
    )
    run.add_argument("--user", help="the user the run is for (memory is per user)")
    run.add_argument("--thread", help="the thread id to save the run under (default: new)")
    run.add_argument(
        "--blocks",
        action="append",
        default=[],
        metavar="FILE.json",
        help="blocks to import into the registry before the run (repeatable)",
    )
    _model_options(run)

    resume = command("resume", "resume a paused or failed run by its thread id")
    resume.add_argument("thread", metavar="THREAD")
    resume.add_argument("--value", help="the answer to the pause (JSON, plain text, or @file.json)")
    _model_options(resume)

    validate = command("validate", "check a pipeline or task plan and list every problem")
    validate.add_argument("file", metavar="FILE.json")
    validate.add_argument("--blocks", action="append", default=[], metavar="FILE.json")

    graph = command("graph", "print the compiled graph of a pipeline or task plan")
    graph.add_argument("file", metavar="FILE.json")
    graph.add_argument("--format", choices=("mermaid",), default="mermaid")
    graph.add_argument("--blocks", action="append", default=[], metavar="FILE.json")

    blocks = command("blocks", "the block registry")
    bsub = blocks.add_subparsers(dest="blocks_command", required=True, metavar="ACTION")
    b_list = bsub.add_parser("list", help="list blocks (latest versions)")
    b_list.add_argument("--category")
    b_list.add_argument("--tag", action="append", default=[])
    b_show = bsub.add_parser("show", help="show one block as JSON")
    b_show.add_argument("id")
    b_show.add_argument("--version", type=int)
    b_add = bsub.add_parser("add", help="add blocks from a JSON file (a block or a list)")
    b_add.add_argument("file", metavar="FILE.json")
    b_search = bsub.add_parser("search", help="full-text search over blocks")
    b_search.add_argument("query")
    b_search.add_argument("--limit", type=int, default=10)
    b_export = bsub.add_parser("export", help="export every block version as JSON")
    b_export.add_argument("--output", "-o", metavar="FILE.json")
    b_import = bsub.add_parser("import", help="import an exported blocks document")
    b_import.add_argument("file", metavar="FILE.json")
    for p in (b_list, b_show, b_add, b_search, b_export, b_import):
        _common(p)

    add_thinker_commands(command)
    add_queue_commands(command)

    runs = command("runs", "the run history")
    rsub = runs.add_subparsers(dest="runs_command", required=True, metavar="ACTION")
    r_list = rsub.add_parser("list", help="list runs, newest first")
    r_list.add_argument("--pipeline")
    r_list.add_argument("--user")
    r_list.add_argument("--status", choices=("completed", "failed", "interrupted", "cancelled"))
    r_list.add_argument("--thread")
    r_list.add_argument("--limit", type=int, default=20)
    r_show = rsub.add_parser("show", help="show one run with every node")
    r_show.add_argument("run_id", metavar="RUN_ID")
    for p in (r_list, r_show):
        _common(p)

    serve = command("serve", "serve the HTTP API on the database (needs flowcore[server])")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    serve.add_argument("--port", type=int, default=8321, help="the TCP port (default 8321)")
    serve.add_argument(
        "--graphs",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="register graphs: a compiled graph, Graph builder, dict of them, or "
        "build(checkpointer=...) (repeatable)",
    )
    serve.add_argument(
        "--max-body-bytes", type=int, default=1024 * 1024, help="larger bodies get 413"
    )
    serve.add_argument(
        "--rate-limit", type=int, default=600, help="requests per minute per API key (429 above)"
    )
    serve.add_argument(
        "--executor",
        default=None,
        metavar="KIND",
        help="where runs execute: inproc (this process, the default) or queue ('flowcore "
        "worker' processes; needs FLOWCORE_DATABASE_URL=postgresql://...); default "
        "$FLOWCORE_EXECUTOR, else inproc",
    )
    _model_options(serve)

    keys = command("keys", "API keys of the HTTP server")
    ksub = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    k_create = ksub.add_parser("create", help="make a key for a user (printed once)")
    k_create.add_argument("--user", required=True, help="the user the key acts as")
    k_list = ksub.add_parser("list", help="list keys (ids and users, never the keys)")
    k_revoke = ksub.add_parser("revoke", help="revoke a key by its id")
    k_revoke.add_argument("key_id", metavar="KEY_ID")
    for p in (k_create, k_list, k_revoke):
        _common(p)
    add_schedule_commands(command, common=_common, model_options=_model_options)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the ``flowcore`` command and return its exit code.

    Exit codes: 0 the command worked (a run completed or paused for a human),
    1 a run failed or a pipeline has problems, 2 the input was wrong (one
    line on stderr says what and how to fix it). Environment variables that
    look like credentials (``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``...) are
    redacted from everything printed, logged and stored.

    Example:
        >>> # main(["run", "examples/lunch_order/plan.json", "--user", "ada"])
    """
    redactor = SecretRedactor.from_environment()
    with redacted_output(redactor, stdout or sys.stdout, stderr or sys.stderr) as (out, err):
        args = build_parser().parse_args(argv)
        args.json = getattr(args, "json", False)
        args.redactor = redactor
        try:
            _choose_database(args)
            _check_text_arguments(args)
            command = (
                SCHEDULE_COMMANDS.get(args.command)
                or COMMANDS.get(args.command)
                or SERVER_COMMANDS.get(args.command)
                or QUEUE_COMMANDS.get(args.command)
                or THINKER_COMMANDS[args.command]
            )
            return asyncio.run(command(args, out))
        except FlowcoreError as exc:
            err.write(_error_lines(exc))
            return EXIT_USAGE
        except KeyboardInterrupt:
            err.write("flowcore: interrupted\n")
            return 130
        except Exception as exc:
            # A bug, not a mistake of the user's: still one line (without secrets), with the
            # traceback only when asked for, so a terminal never shows a wall of frames.
            safe = scrub_error(exc, redactor)
            if os.environ.get("FLOWCORE_TRACEBACK"):
                raise safe from None
            err.write(
                f"flowcore: error: internal error: {type(exc).__name__}: {one_line(str(safe))} "
                "(this is a flowcore bug: please report it; set FLOWCORE_TRACEBACK=1 to see "
                "the traceback)\n"
            )
            return EXIT_INTERNAL


def _choose_database(args: argparse.Namespace) -> None:
    """``--db``, else ``$FLOWCORE_DATABASE_URL``, else ``$FLOWCORE_DB`` or the default file.

    A Postgres URL goes to ``args.database`` (``args.db`` keeps the default
    file, unused); an SQLite one is read as if given with ``--db``.
    """
    args.database = None
    if getattr(args, "db", None) is None:
        target = database_url_from_env()
        if target is not None and target.kind == "sqlite":
            args.db = Path(target.location)
        else:
            args.database = target
    args.db = getattr(args, "db", None) or default_db_path()


def _error_lines(exc: FlowcoreError) -> str:
    """One line for a mistake; a heading and one line per problem when there are several."""
    problems = getattr(exc, "problems", None)
    text = str(exc)
    if (
        isinstance(problems, tuple | list)
        and len(problems) > 1
        and all(isinstance(p, str) for p in problems)
    ):
        heading = one_line(text.splitlines()[0] if text else type(exc).__name__)
        heading = heading if heading.endswith(":") else f"{heading.rstrip('.')}:"
        listed = "".join(f"  - {one_line(p)}\n" for p in problems)
        return f"flowcore: error: {heading}\n{listed}"
    return f"flowcore: error: {one_line(text)}\n"


# Arguments naming files: a file name may hold bytes that are not UTF-8, and stays as
# the OS gave it (Python keeps such bytes as lone surrogates, which open() takes back).
_PATH_ARGUMENTS = frozenset({"file", "db", "blocks", "tools", "output"})


def _check_text_arguments(args: argparse.Namespace) -> None:
    """Refuse an id, name or value that holds bytes the terminal gave but UTF-8 cannot hold.

    Such text (e.g. from ``$'\\xff'`` in a shell) reaches Python as lone
    surrogates, which no database, model or JSON document can store: refused
    here, before anything runs, instead of failing deep inside a store.
    """
    for name, value in vars(args).items():
        if name in _PATH_ARGUMENTS:
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            if not isinstance(item, str) or (name == "input" and item.startswith("@")):
                continue
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                shown = item.encode("utf-8", "backslashreplace").decode("ascii", "replace")
                raise CliError(
                    f"{name.replace('_', ' ')} {shown[:60]!r} holds bytes that are not UTF-8 text; "
                    "retype it, or pass it from a UTF-8 file (--input @file.json)"
                ) from None
