"""Building the server on the CLI's database, and loading graphs named ``module:attr``.

:func:`open_server` opens the same stores the CLI opens (blocks, memory,
checkpoints, run history: one SQLite file, or Postgres when
``FLOWCORE_DATABASE_URL`` names one) plus the server's own tables on the
same database, and builds the app on them. The executor that runs the API's
runs comes from ``executor_factory`` (in process by default), so another
one (a queue's, say) is one argument away. :func:`serve` runs it under uvicorn until SIGTERM
or Ctrl-C, then stops running runs at a checkpoint (docs/serve.md).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from flowcore.checkpoint.protocol import Checkpointer
from flowcore.cli.workspace import CliError, Workspace, open_workspace
from flowcore.graph.builder import Graph
from flowcore.llm.protocol import LLMProvider
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan
from flowcore.pipeline.runner import PipelineRunner
from flowcore.port.inproc import InProcExecutor
from flowcore.secrets import NO_REDACTION, Redactor, SecretRedactor
from flowcore.server.db import open_server_database
from flowcore.server.executor import ServerExecutor
from flowcore.server.settings import ServerSettings
from flowcore.storage import DatabaseTarget
from flowcore.tools.runner import Tool

__all__ = ["ExecutorFactory", "inproc_executor", "load_graphs", "open_server", "serve"]

ExecutorFactory = Callable[[Workspace, PipelineRunner, Redactor], ServerExecutor]
"""Makes the executor the runs API submits to, from the open workspace, its runner, the redactor."""


def inproc_executor(ws: Workspace, runner: PipelineRunner, redactor: Redactor) -> InProcExecutor:
    """The default executor: runs go in this process, recorded in the workspace's history.

    Example:
        >>> # async with open_server(settings, ..., executor_factory=inproc_executor) as app: ...
    """
    return InProcExecutor(runner=runner, history=ws.history, redactor=redactor)


# uvicorn's own formatters read a record's raw arguments, which flowcore's log redaction
# has already folded into the (redacted) message; plain formatters print that message.
LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(levelname)s:     %(message)s"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "stream": "ext://sys.stderr",
        }
    },
    "loggers": {
        "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "uvicorn.error": {"level": "INFO"},
        "uvicorn.access": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "flowcore": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
    },
}


def _named(value: Any, name: str) -> str:
    own = getattr(value, "name", None)
    return own if isinstance(own, str) and own else name


def _graphs_of(value: Any, name: str, checkpointer: Checkpointer) -> dict[str, Any]:
    if isinstance(value, Mapping):
        found: dict[str, Any] = {}
        for key, item in value.items():
            found.update(_graphs_of(item, str(key), checkpointer))
        return found
    if isinstance(value, Pipeline):
        return {value.id: value}
    if isinstance(value, TaskPlan):
        return {value.plan_id: value}
    if isinstance(value, Graph):
        # A graph builder: compiled here, on the database's checkpointer, so its runs
        # can pause, resume and survive a restart.
        return {_named(value, name): value.compile(checkpointer=checkpointer)}
    if hasattr(value, "run_stream") or hasattr(value, "stream"):
        return {_named(value, name): value}
    if callable(value):
        return _graphs_of(value(checkpointer=checkpointer), name, checkpointer)
    raise CliError(
        f"--graphs {name!r} is a {type(value).__name__}; point it at a compiled graph, a Graph "
        "builder, a dict of them, or a function taking checkpointer= that returns one"
    )


def load_graphs(specs: Sequence[str], checkpointer: Checkpointer) -> dict[str, Any]:
    """The graphs ``--graphs module:attr`` names, by name.

    ``attr`` may be a compiled graph (native or LangGraph-style), a Pipeline
    or TaskPlan, a ``Graph`` builder (compiled with the database's
    checkpointer), a dict of those, or a function ``build(checkpointer=...)``
    returning one. The current directory is importable.

    Example:
        >>> load_graphs([], checkpointer=None)  # type: ignore[arg-type]
        {}
    """
    graphs: dict[str, Any] = {}
    if specs and "" not in sys.path:
        sys.path.insert(0, "")
    for spec in specs:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise CliError(f"--graphs {spec!r} must be module:attr, e.g. myapp.graphs:build")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise CliError(f"--graphs {spec!r}: cannot import {module_name!r}: {exc}") from None
        if not hasattr(module, attr):
            raise CliError(f"--graphs {spec!r}: module {module_name!r} has no {attr!r}")
        graphs.update(_graphs_of(getattr(module, attr), attr, checkpointer))
    return graphs


@asynccontextmanager
async def open_server(
    settings: ServerSettings,
    *,
    db_path: Path,
    database: DatabaseTarget | None = None,
    provider: LLMProvider,
    model: str | None = None,
    tools: Sequence[Tool] = (),
    graph_specs: Sequence[str] = (),
    graphs: Mapping[str, Any] | None = None,
    redactor: SecretRedactor | None = None,
    recover: bool = True,
    executor_factory: ExecutorFactory = inproc_executor,
) -> AsyncIterator[Any]:
    """The app on the database at ``db_path`` (opened for as long as the block runs).

    A Postgres ``database`` (what ``FLOWCORE_DATABASE_URL`` names) is used
    instead of ``db_path`` for every store and the server's own tables, so
    several server processes can share it.

    Example:
        >>> # async with open_server(settings, db_path=p, provider=OfflineProvider()) as app:
        >>> #     ...
    """
    from flowcore.server.app import create_app

    async with (
        open_workspace(db_path, redactor=redactor, database=database) as ws,
        open_server_database(db_path, database) as db,
    ):
        runner = ws.runner(provider, model, list(tools))
        executor = executor_factory(ws, runner, redactor or NO_REDACTION)
        opener = getattr(executor, "open", None)
        if opener is not None:  # one that connects somewhere (the queue's) does it here
            await opener()
        registered = load_graphs(graph_specs, ws.checkpoints)
        registered.update(graphs or {})
        app = create_app(
            settings,
            db=db,
            executor=executor,
            blocks_store=ws.blocks,
            history=ws.history,
            memory_store=ws.memory,
            graphs=registered,
            redactor=redactor or NO_REDACTION,
            recover=recover,
        )
        try:
            yield app
        finally:
            await app.state.services.runs.shutdown()
            if app.state.services.thinker is not None:
                await app.state.services.thinker.aclose()
            await executor.aclose()


async def serve(app: Any, settings: ServerSettings, *, announce: Callable[[str], None]) -> None:
    """Run ``app`` under uvicorn until it is told to stop, stopping runs first.

    Example:
        >>> # await serve(app, settings, announce=print)
    """
    import uvicorn

    from flowcore.server.shutdown import graceful_server

    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="info",
        log_config=LOG_CONFIG,
        timeout_graceful_shutdown=int(settings.shutdown_grace) + 5,
        lifespan="on",
    )
    server = graceful_server(config, app.state.services.runs.shutdown)
    announce(
        f"flowcore serve: http://{settings.host}:{settings.port} (API docs at /docs; "
        "every /api route needs 'Authorization: Bearer <key>')"
    )
    await server.serve()
