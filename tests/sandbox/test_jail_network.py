"""Spec: a block whose definition grants network can call an HTTP API with httpx; without
the grant the same block gets a clear error and nothing reaches the server.

The server is a real HTTP listener on the host's loopback: bubblewrap shares
the host's network namespace only for ``network=True``, so that is the only
way the block can reach it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal

import pytest

from flowcore.sandbox import PythonSandbox, SandboxExecutionError, SandboxViolation

from .conftest import LIMITS

CALL_API = """
import httpx

def execute(inputs, context):
    reply = httpx.get(inputs["url"], params={"city": inputs["city"]}, timeout=5)
    return {"status": reply.status_code, "forecast": reply.json()["forecast"]}
"""

CALL_API_ASYNC = """
import httpx

async def execute(inputs, context):
    async with httpx.AsyncClient(timeout=5) as client:
        reply = await client.get(inputs["url"], params={"city": inputs["city"]})
    return {"status": reply.status_code, "forecast": reply.json()["forecast"]}
"""


@dataclass
class Api:
    url: str
    requests: list[bytes] = field(default_factory=list)


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    """A weather API on 127.0.0.1 that records every request line it gets."""
    found = Api("")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        found.requests.append(head.split(b"\r\n", 1)[0])
        body = json.dumps({"forecast": "sunny"}).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    found.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/weather"
    try:
        yield found
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("isolation", ["bubblewrap", "unshare"])
async def test_a_block_granted_network_calls_the_api_with_httpx(
    api: Api, isolation: Literal["bubblewrap", "unshare"]
) -> None:
    sandbox = PythonSandbox(limits=LIMITS, isolation=isolation)

    result = await sandbox.run(
        CALL_API, {"url": api.url, "city": "Oslo"}, {}, network=True, timeout=20
    )

    assert result.outputs == {"status": 200, "forecast": "sunny"}
    assert api.requests == [b"GET /weather?city=Oslo HTTP/1.1"]


@pytest.mark.parametrize("policy", [True, False], ids=["with the policy", "jail alone"])
async def test_an_async_block_may_await_httpx(api: Api, policy: bool) -> None:
    # Seed 003's shape: async def execute that awaits an API call; the worker
    # runs the coroutine to the end, under the policy's guards or without them.
    sandbox = PythonSandbox(limits=LIMITS, policy=policy)

    result = await sandbox.run(
        CALL_API_ASYNC, {"url": api.url, "city": "Lima"}, {}, network=True, timeout=20
    )

    assert result.outputs == {"status": 200, "forecast": "sunny"}
    assert api.requests == [b"GET /weather?city=Lima HTTP/1.1"]


async def test_without_the_grant_the_policy_says_to_declare_network(
    api: Api, sandbox: PythonSandbox
) -> None:
    with pytest.raises(SandboxViolation) as refused:
        await sandbox.run(CALL_API, {"url": api.url, "city": "Oslo"}, {}, timeout=20)

    assert "network=True" in str(refused.value)
    assert api.requests == []


async def test_without_the_grant_the_jail_alone_has_neither_httpx_nor_a_route(
    api: Api, jail_only: PythonSandbox
) -> None:
    with pytest.raises(SandboxExecutionError, match="No module named 'httpx'"):
        await jail_only.run(CALL_API, {"url": api.url, "city": "Oslo"}, {}, timeout=20)
    dial = (
        "import socket\ndef execute(inputs, context):\n"
        "    socket.create_connection(('127.0.0.1', inputs['port']), timeout=2)\n"
        "    return {}"
    )
    port = int(api.url.split(":")[2].split("/")[0])

    # Its own network namespace has a loopback of its own, where nothing listens.
    with pytest.raises(SandboxViolation, match="Connection refused") as stopped:
        await jail_only.run(dial, {"port": port}, {}, timeout=20)
    assert stopped.value.layer == "jail"
    assert api.requests == []
