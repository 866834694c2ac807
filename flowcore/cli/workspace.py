"""What a CLI command works on: one database file, the model, the tools.

The CLI keeps everything in one SQLite file: the block registry, long-term
memory, checkpoints and the run history. The model is picked from the
environment (an API key or a local server's address); without one the
offline stand-in answers, so every command works on a fresh machine.
With a redactor, the checkpoints and the run history are written through a
redacting serializer and runs get the redactor too.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.postgres_store import PostgresBlockStore
from flowcore.blocks.store import BlockNotFoundError, SqliteBlockStore
from flowcore.checkpoint.postgres import PostgresCheckpointer
from flowcore.checkpoint.serde import JsonSerializer
from flowcore.checkpoint.sqlite import SqliteCheckpointer
from flowcore.errors import FlowcoreError
from flowcore.history import SqliteRunHistory
from flowcore.history.postgres import PostgresRunHistory
from flowcore.llm.offline import OfflineProvider
from flowcore.llm.protocol import LLMProvider
from flowcore.llm.registry import ProviderRegistry
from flowcore.memory.manager import MemoryManager
from flowcore.memory.postgres import PostgresStore
from flowcore.memory.sqlite import SqliteStore
from flowcore.pipeline.runner import PipelineRunner
from flowcore.sandbox import PythonSandbox
from flowcore.secrets import Redactor
from flowcore.storage import DatabaseTarget, open_backends
from flowcore.tools.runner import Tool, ToolRunner

__all__ = [
    "CliError",
    "OverlayBlockStore",
    "ProviderChoice",
    "Workspace",
    "choose_provider",
    "default_db_path",
    "load_tools",
    "open_registry",
    "open_workspace",
]

PROVIDERS = ("offline", "openai", "anthropic", "local")


class CliError(FlowcoreError):
    """A command cannot be carried out as typed; the message says how to fix it."""

    code = "cli-usage"


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """``$FLOWCORE_DB``, else ``$XDG_DATA_HOME/flowcore/flowcore.db`` (``~/.local/share``).

    Example:
        >>> str(default_db_path({"FLOWCORE_DB": "/tmp/x.db"}))
        '/tmp/x.db'
    """
    env = os.environ if env is None else env
    if env.get("FLOWCORE_DB"):
        return Path(env["FLOWCORE_DB"])
    base = Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "flowcore" / "flowcore.db"


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    """Which model a run talks to, and why (shown to the user)."""

    name: str
    model: str | None
    reason: str


def choose_provider(
    requested: str | None, model: str | None, env: Mapping[str, str] | None = None
) -> tuple[LLMProvider, ProviderChoice]:
    """The provider for a run: ``--provider``, else whatever the environment configures.

    ``OPENAI_API_KEY`` selects OpenAI, ``ANTHROPIC_API_KEY`` Anthropic, and
    ``FLOWCORE_BASE_URL`` (or ``OPENAI_BASE_URL`` without a key) a local
    OpenAI-compatible server; with none of them the offline stand-in answers.

    Example:
        >>> choose_provider(None, None, {})[1].name
        'offline'
    """
    env = os.environ if env is None else env
    model = model or env.get("FLOWCORE_MODEL") or None
    name = requested or env.get("FLOWCORE_PROVIDER") or None
    local_url = env.get("FLOWCORE_BASE_URL") or (
        env.get("OPENAI_BASE_URL") if not env.get("OPENAI_API_KEY") else None
    )
    reason = "chosen with --provider" if requested else "set by FLOWCORE_PROVIDER"
    if name is None:
        if env.get("OPENAI_API_KEY"):
            name, reason = "openai", "OPENAI_API_KEY is set"
        elif env.get("ANTHROPIC_API_KEY"):
            name, reason = "anthropic", "ANTHROPIC_API_KEY is set"
        elif local_url:
            name, reason = "local", "FLOWCORE_BASE_URL is set"
        else:
            name, reason = "offline", "no API key or FLOWCORE_BASE_URL is set"
    if name not in PROVIDERS:
        raise CliError(f"unknown provider {name!r}; use one of: {', '.join(PROVIDERS)}")
    if name == "offline":
        return OfflineProvider(), ProviderChoice("offline", None, reason)
    if name == "openai":
        key = env.get("OPENAI_API_KEY")
        if not key:
            raise CliError("provider 'openai' needs OPENAI_API_KEY in the environment")
        from flowcore.llm.openai_provider import OpenAIProvider

        model = model or "gpt-4o-mini"
        provider: LLMProvider = OpenAIProvider(
            api_key=key, model=model, base_url=env.get("OPENAI_BASE_URL") or None
        )
        return provider, ProviderChoice("openai", model, reason)
    if name == "anthropic":
        key = env.get("ANTHROPIC_API_KEY")
        if not key:
            raise CliError("provider 'anthropic' needs ANTHROPIC_API_KEY in the environment")
        from flowcore.llm.anthropic_provider import AnthropicProvider

        model = model or "claude-3-5-haiku-latest"
        provider = AnthropicProvider(
            api_key=key, model=model, base_url=env.get("ANTHROPIC_BASE_URL") or None
        )
        return provider, ProviderChoice("anthropic", model, reason)
    if not local_url:
        raise CliError(
            "provider 'local' needs FLOWCORE_BASE_URL, e.g. http://127.0.0.1:11434/v1 "
            "for an OpenAI-compatible server"
        )
    from flowcore.llm.openai_provider import OpenAIProvider

    model = model or "local-model"
    provider = OpenAIProvider(
        api_key=env.get("FLOWCORE_API_KEY") or "not-needed", model=model, base_url=local_url
    )
    return provider, ProviderChoice("local", model, f"{reason} ({local_url})")


def load_tools(paths: Iterable[str | Path]) -> list[Tool]:
    """The tools that Python files define in a module-level ``TOOLS`` list.

    Example:
        >>> load_tools([])
        []
    """
    tools: list[Tool] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise CliError(f"tools file {str(path)!r} does not exist")
        name = f"flowcore_cli_tools_{len(tools)}_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CliError(f"cannot load {str(path)!r} as Python; give a .py file")
        module = importlib.util.module_from_spec(spec)
        # Registered so pydantic models defined in the file resolve their own annotations.
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise CliError(f"tools file {str(path)!r} failed to load: {exc}") from None
        found = getattr(module, "TOOLS", None)
        if not isinstance(found, list | tuple) or not all(isinstance(t, Tool) for t in found):
            raise CliError(
                f"tools file {str(path)!r} must define TOOLS = [Tool(...), ...] "
                "(flowcore.tools.Tool)"
            )
        tools.extend(found)
    return tools


class OverlayBlockStore:
    """The registry, with blocks from a file taking precedence (nothing is written).

    Lets ``validate`` and ``graph`` check a pipeline against a blocks file
    without importing it.

    Example:
        >>> # store = OverlayBlockStore(registry, [block_a, block_b])
    """

    def __init__(
        self, base: SqliteBlockStore | PostgresBlockStore, extra: Iterable[BlockDefinition]
    ) -> None:
        self.base = base
        self.extra: dict[str, list[BlockDefinition]] = {}
        for block in extra:
            self.extra.setdefault(block.id, []).append(block)

    async def get(self, block_id: str, version: int | None = None) -> BlockDefinition:
        """The block from the file if it has it (that version, or its newest), else the registry.

        Example:
            >>> # block = await store.get("summarize")
        """
        candidates = self.extra.get(block_id, [])
        if version is not None:
            candidates = [b for b in candidates if b.version == version]
        if candidates:
            return max(candidates, key=lambda b: b.version)
        try:
            return await self.base.get(block_id, version)
        except LookupError:
            # The registry's own hint names its Python methods; on the command line,
            # name the commands that list, find and add blocks.
            what = f"block {block_id!r}" + (f" version {version}" if version else "")
            where = "the database" if self.base.path == ":memory:" else self.base.path
            raise BlockNotFoundError(
                f"no {what} in {where}; 'flowcore blocks list' lists the stored blocks, "
                "'flowcore blocks search TEXT' finds one, 'flowcore blocks add FILE.json' "
                "adds one (or pass --blocks FILE.json)",
                block=block_id,
                version=version,
            ) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)


@dataclass(slots=True)
class Workspace:
    """The open stores of one database (a file, or Postgres)."""

    path: Path | str
    """The SQLite file, or the Postgres URL with its password hidden (for messages)."""
    blocks: SqliteBlockStore | PostgresBlockStore
    memory: SqliteStore | PostgresStore
    checkpoints: SqliteCheckpointer | PostgresCheckpointer
    history: SqliteRunHistory | PostgresRunHistory
    redactor: Redactor | None = None

    def runner(
        self,
        provider: LLMProvider,
        model: str | None,
        tools: list[Tool],
        blocks: SqliteBlockStore | PostgresBlockStore | OverlayBlockStore | None = None,
    ) -> PipelineRunner:
        """A pipeline runner on this database with the given model and tools.

        Example:
            >>> # runner = workspace.runner(OfflineProvider(), None, [])
        """
        executor = BlockExecutor(
            providers=ProviderRegistry.single(provider, model=model),
            tools=ToolRunner(tools),
            memory=self.memory,
            # The CLI is a front door: blocks see the variables their `env` names.
            sandbox=PythonSandbox.from_environment(os.environ),
            environment=os.environ,
        )
        return PipelineRunner(
            blocks=blocks or OverlayBlockStore(self.blocks, ()),
            executor=executor,
            memory=MemoryManager(self.memory),
            checkpointer=self.checkpoints,
            history=self.history,
            redactor=self.redactor,
        )


def _read_only(path: Path) -> CliError:
    return CliError(
        f"the database {str(path)!r} is read-only: flowcore writes to it (its tables, runs, "
        "checkpoints, blocks), even for commands that only list; make it and its folder "
        f"writable (chmod u+w {str(path)!r}) or pass another --db"
    )


def _is_read_only(exc: BaseException) -> bool:
    """Whether SQLite refused a write because the file (or its folder) is read-only."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, sqlite3.Error) and (
            getattr(seen, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_READONLY
            or "readonly database" in str(seen)
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _prepare(path: Path) -> None:
    if path.is_dir():
        raise CliError(f"--db {str(path)!r} is a directory; give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create the folder of --db {str(path)!r}: {exc.strerror}") from None
    # SQLite needs to write the file and, for its journal, the folder beside it.
    if (path.exists() and not os.access(path, os.W_OK)) or not os.access(path.parent, os.W_OK):
        raise _read_only(path)


@asynccontextmanager
async def open_workspace(
    path: Path, *, redactor: Redactor | None = None, database: DatabaseTarget | None = None
) -> AsyncIterator[Workspace]:
    """Open (creating if needed) the database at ``path`` with every store the CLI uses.

    ``redactor`` scrubs secrets from what the checkpoints and the history store.
    A Postgres ``database`` (from ``$FLOWCORE_DATABASE_URL``) is used instead of ``path``.

    Example:
        >>> # async with open_workspace(Path("flowcore.db")) as ws: ...
    """
    serializer = None if redactor is None else JsonSerializer(redactor=redactor)
    if database is not None and database.kind == "postgres":
        async with open_backends(database, serializer=serializer) as b:
            yield Workspace(
                database.display, b.blocks, b.memory, b.checkpoints, b.history, redactor
            )
        return
    await asyncio.to_thread(_prepare, path)
    async with AsyncExitStack() as stack:
        try:
            # The checkpointer is the strictest about foreign files, so it opens first.
            checkpoints = await stack.enter_async_context(
                SqliteCheckpointer(path, serializer=serializer)
            )
            blocks = await stack.enter_async_context(SqliteBlockStore(path))
            memory = await stack.enter_async_context(SqliteStore(path))
            history = await stack.enter_async_context(SqliteRunHistory(path, serializer=serializer))
        except FlowcoreError as exc:
            if _is_read_only(exc):
                raise _read_only(path) from None
            raise
        yield Workspace(path, blocks, memory, checkpoints, history, redactor)


@asynccontextmanager
async def open_registry(
    path: Path, database: DatabaseTarget | None = None
) -> AsyncIterator[SqliteBlockStore | PostgresBlockStore]:
    """The block registry of the database at ``path``, for commands that only read blocks.

    A database that does not exist is not created: the registry is then an
    in-memory one holding the builtin blocks, so ``flowcore graph FILE`` and
    ``flowcore validate FILE`` leave no file behind.

    Example:
        >>> # async with open_registry(Path("flowcore.db")) as blocks: ...
    """
    if database is not None and database.kind == "postgres":
        async with PostgresBlockStore(database.location) as pg_blocks:
            yield pg_blocks
        return
    exists = await asyncio.to_thread(path.exists)
    if exists:
        await asyncio.to_thread(_prepare, path)
    try:
        async with SqliteBlockStore(path if exists else ":memory:") as blocks:
            yield blocks
    except FlowcoreError as exc:
        if _is_read_only(exc):
            raise _read_only(path) from None
        raise
