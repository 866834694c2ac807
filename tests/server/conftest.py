"""The server under test: ``open_server`` on a fresh database, served over ASGI to httpx.

Every spec that takes ``server`` or ``make_server`` runs twice: on an SQLite
file and on Postgres (a fresh schema of the throwaway cluster, tests/pg.py;
skipped without Postgres unless ``FLOWCORE_REQUIRE_POSTGRES=1``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")

from flowcore.llm.offline import OfflineProvider
from flowcore.port.sse import parse_sse
from flowcore.server import ServerSettings
from flowcore.server.serve import open_server
from flowcore.storage import DatabaseTarget
from tests.server.graphs import Gate, approval_graph, echo_graph, gated_graph
from tests.server.live import Served


@dataclass
class Server:
    """A running app with two users' keys and an HTTP client per user."""

    app: Any
    path: Path
    gate: Gate
    database: DatabaseTarget | None = None
    clients: dict[str, httpx.AsyncClient] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def ada(self) -> httpx.AsyncClient:
        return self.clients["ada"]

    @property
    def bob(self) -> httpx.AsyncClient:
        return self.clients["bob"]

    @property
    def manager(self) -> Any:
        return self.app.state.services.runs

    async def finished(self, client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
        """Read the run's event stream to its end, then return the run."""
        events = await client.get(f"/api/runs/{run_id}/events")
        assert events.status_code == 200, events.text
        assert parse_sse(events.text)[-1].type == "done"
        detail = await client.get(f"/api/runs/{run_id}")
        assert detail.status_code == 200, detail.text
        body: dict[str, Any] = detail.json()
        return body


def client_for(app: Any, token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://flowcore.test", headers=headers
    )


MakeServer = Callable[..., Awaitable[Server]]


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest) -> DatabaseTarget | None:
    """Where the server keeps everything: None (the SQLite file) or a Postgres schema."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("pg_schema_url")
    return DatabaseTarget("postgres", url)


async def start_server(
    stack: AsyncExitStack, path: Path, database: DatabaseTarget | None, **overrides: Any
) -> Server:
    """A server on ``database`` (else the file at ``path``), closed when ``stack`` closes."""
    redactor = overrides.pop("redactor", None)
    settings = ServerSettings(**overrides)
    gate = Gate()
    app = await stack.enter_async_context(
        open_server(
            settings,
            db_path=path,
            database=database,
            provider=OfflineProvider(),
            graphs={},
            recover=False,
            redactor=redactor,
        )
    )
    checkpointer = app.state.services.runs.executor.runner.checkpointer
    for name, graph in {
        "echo": echo_graph(checkpointer),
        "approval": approval_graph(),
        "gated": gated_graph(gate),
    }.items():
        app.state.services.runs.executor.register(name, graph.compile(checkpointer=checkpointer))
    server = Server(app, path, gate, database)
    for user in ("ada", "bob"):
        _, token = await app.state.services.keys.create(user)
        server.tokens[user] = token
        server.clients[user] = await stack.enter_async_context(client_for(app, token))
    server.clients["anonymous"] = await stack.enter_async_context(client_for(app, None))
    stack.push_async_callback(_open_gate, gate)
    return server


@pytest.fixture
async def make_server(tmp_path: Path, database: DatabaseTarget | None) -> AsyncIterator[MakeServer]:
    """Build a server (settings overridable); everything is closed after the test."""
    async with AsyncExitStack() as stack:

        async def make(**overrides: Any) -> Server:
            return await start_server(stack, tmp_path / "flowcore.db", database, **overrides)

        yield make


async def _open_gate(gate: Gate) -> None:
    gate.opened.set()


@pytest.fixture
async def server(make_server: MakeServer) -> Server:
    """A server with default settings."""
    return await make_server()


@pytest.fixture
def servers() -> Iterator[list[Served]]:
    """Real ``flowcore serve`` processes a spec starts (tests/server/live.py); ended after it."""
    started: list[Served] = []
    yield started
    for served in started:
        served.kill()
