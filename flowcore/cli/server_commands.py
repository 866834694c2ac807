"""The CLI's server commands: ``flowcore serve`` and ``flowcore keys create|list|revoke``.

``serve`` needs the ``server`` extra; without it the command says how to
install it. ``keys`` works without it: keys live in the CLI's database
(``--db``, or Postgres when ``FLOWCORE_DATABASE_URL`` names it, as for serve).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from typing import Any, TextIO

from flowcore.cli.render import table
from flowcore.cli.workspace import CliError, choose_provider, load_tools
from flowcore.server.db import open_server_database
from flowcore.server.keys import ApiKeys
from flowcore.server.settings import ServerSettings

__all__ = ["SERVER_COMMANDS"]


def _need_server_extra() -> None:
    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        raise CliError(
            f"'flowcore serve' needs the server extra ({', '.join(missing)} missing): "
            "pip install 'flowcore[server]'"
        )


async def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    """Serve the HTTP API on the database until SIGTERM or Ctrl-C."""
    _need_server_extra()
    from flowcore.server.queue_executor import executor_kind, queue_executor_factory
    from flowcore.server.serve import open_server, serve

    if not 0 < args.port < 65536:
        raise CliError(f"--port {args.port} is not a TCP port; use 1-65535 (default 8321)")
    settings = ServerSettings(
        host=args.host,
        port=args.port,
        db=args.db,
        max_body_bytes=args.max_body_bytes,
        rate_limit=args.rate_limit,
    )
    provider, choice = choose_provider(args.provider, args.model)
    tools = load_tools(args.tools)
    database = getattr(args, "database", None)
    options: dict[str, Any] = {}
    kind = executor_kind(getattr(args, "executor", None) or os.environ.get("FLOWCORE_EXECUTOR"))
    if kind == "queue":
        if database is None or database.kind != "postgres":
            raise CliError(
                "'flowcore serve --executor queue' needs a Postgres database: set "
                "FLOWCORE_DATABASE_URL=postgresql://user:password@host:5432/dbname (the "
                "database 'flowcore worker' processes use)"
            )
        options["executor_factory"] = queue_executor_factory(str(database.location))
    async with open_server(
        settings,
        db_path=args.db,
        database=database,
        provider=provider,
        model=choice.model,
        tools=tools,
        graph_specs=args.graphs,
        redactor=args.redactor,
        **options,
    ) as app:
        graphs = sorted(app.state.services.runs.executor.graphs)
        out.write(
            f"flowcore serve · db {database.display if database else args.db} · "
            f"model {choice.name}: {choice.reason} · executor {kind} · "
            f"graphs: {', '.join(graphs) or 'none'}\n"
        )
        out.flush()

        def announce(line: str) -> None:
            out.write(line + "\n")
            out.flush()

        await serve(app, settings, announce=announce)
    return 0


async def cmd_keys(args: argparse.Namespace, out: TextIO) -> int:
    """Create, list or revoke API keys in the database."""
    async with open_server_database(args.db, getattr(args, "database", None)) as db:
        keys = ApiKeys(db)
        if args.keys_command == "create":
            key, token = await keys.create(args.user)
            if args.json:
                import json

                out.write(json.dumps({"key_id": key.key_id, "user": key.user_id, "key": token}))
                out.write("\n")
            else:
                out.write(f"created {key.key_id} for user {key.user_id}; the key (shown once):\n")
                out.write(token + "\n")
            return 0
        if args.keys_command == "list":
            rows = [
                [k.key_id, k.user_id, "active" if k.active else "revoked"]
                for k in await keys.list()
            ]
            out.write(
                table(["KEY ID", "USER", "STATE"], rows) + "\n" if rows else "no API keys yet\n"
            )
            return 0
        key = await keys.revoke(args.key_id)
        out.write(f"revoked {key.key_id} (user {key.user_id})\n")
        return 0


SERVER_COMMANDS = {"serve": cmd_serve, "keys": cmd_keys}
