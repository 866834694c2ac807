"""Spec: what the policy layer refuses at compile time, and what seed-003 blocks may use.

The compile-time checks name the line, what is not allowed and what to do
instead; everything they let through still runs under the run-time guards
(see test_guards.py). A block written the way seed 003's planner writes
them (async, several allowed modules, its listed environment variables)
runs under the full jail and under an opted-in weaker one alike.
"""

from __future__ import annotations

import asyncio
import random
from typing import Literal

import pytest

from flowcore.sandbox import PythonSandbox, check_policy

from .conftest import LIMITS


def test_a_module_name_outside_its_allowlist_is_refused_with_what_the_module_offers() -> None:
    source = (
        "import functools, json\n"
        "def execute(inputs, context):\n"
        "    functools.update_wrapper(execute, json.dumps, updated=('__globals__',))\n"
        "    return {}\n"
    )

    assert check_policy(source) == [
        "line 3: functools.update_wrapper is not available in a sandboxed block; "
        "functools offers: cache, cmp_to_key, lru_cache, partial, reduce"
    ]


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (
            "from functools import singledispatch\n",
            "line 1: functools.singledispatch is not available in a sandboxed block",
        ),
        ("import os\nx = getattr(os, 'system')\n", "line 2: os.system is not available"),
        ("import os.path\n", "line 1: import of 'os.path' is not allowed"),
        ("x = getattr('{0}', 'format')\n", "line 1: getattr() of 'format' is not allowed"),
        ("class A(dict, metaclass=type):\n    pass\n", 'keyword argument "metaclass"'),
        ("class A(dict, total=True):\n    pass\n", "class keyword arguments are not allowed"),
        ("import json as j\nx = j.decoder\n", "line 2: json.decoder is not available"),
        ("g = (i for i in [])\nx = g.gi_frame\n", '"gi_frame" is a restricted name'),
    ],
)
def test_the_compile_time_checks_name_the_line_and_the_reason(source: str, problem: str) -> None:
    problems = check_policy(source + "def execute(inputs, context):\n    return {}\n")

    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize("terms", [400, 50_000])
def test_code_too_deep_to_check_is_refused_with_a_reason_not_a_recursion_error(
    terms: int,
) -> None:
    source = "def execute(inputs, context):\n    return {'x': " + "+".join(["1"] * terms) + "}\n"

    (problem,) = check_policy(source)

    assert problem.startswith("the code nests too deeply for the policy to check it")


def test_a_nul_byte_is_a_problem_without_a_line_number() -> None:
    assert check_policy("x = 1\x00") == ["source code string cannot contain null bytes"]


def test_a_name_that_is_rebound_is_left_to_the_run_time_guards() -> None:
    # `json` is reassigned, so `json.codecs` may not be the module any more.
    source = "import json\ndef execute(inputs, context):\n    json = {}\n    return json.keys()\n"

    assert check_policy(source) == []


SEED_BLOCK = """
import json, math, statistics, re, datetime, random, os
from collections import Counter
from itertools import islice
from functools import reduce

async def scores(words):
    for word in words:
        yield word, len(word)

async def execute(inputs, context):
    words = re.findall(r"[a-z]+", inputs["text"].lower())
    lengths = {}
    async for word, size in scores(words):
        lengths[word] = size
    day = datetime.datetime(2024, 3, 1)
    rng = random.Random(7)
    return {
        "top": Counter(words).most_common(1),
        "mean": statistics.mean(lengths.values()),
        "root": math.isqrt(reduce(lambda a, b: a + b, lengths.values())),
        "first": list(islice(words, 2)),
        "day": day.strftime("%d %B %Y"),
        "pick": rng.choice(sorted(lengths)),
        "city": os.getenv("CITY", "unknown"),
        "echo": json.loads(json.dumps({"n": len(words)})),
    }
"""


@pytest.mark.parametrize("isolation", ["bubblewrap", "rlimits"])
async def test_a_seed_003_block_runs_under_the_full_and_a_weaker_jail(
    isolation: Literal["bubblewrap", "rlimits"],
) -> None:
    sandbox = PythonSandbox(limits=LIMITS, isolation=isolation)

    result = await sandbox.run(
        SEED_BLOCK, {"text": "the cat saw the hat"}, {}, env={"CITY": "Lyon"}
    )

    assert check_policy(SEED_BLOCK) == []
    assert result.outputs == {
        "top": [["the", 2]],
        "mean": 3,
        "root": 3,
        "first": ["the", "cat"],
        "day": "01 March 2024",
        "pick": random.Random(7).choice(["cat", "hat", "saw", "the"]),
        "city": "Lyon",
        "echo": {"n": 5},
    }


NETWORK_PROBE = """
import httpx

async def execute(inputs, context):
    async with httpx.AsyncClient(timeout=2) as client:
        response = await client.get(inputs["url"])
    found = {"status": response.status_code, "body": response.json()}
    for name, reach in (
        ("stream", lambda: response.extensions["network_stream"]),
        ("cookies", lambda: response.cookies.jar),
        ("coroutine", lambda: client.get(inputs["url"]).send),
    ):
        try:
            found[name] = str(reach())
        except AttributeError as exc:
            found[name] = "refused" if "sandboxed block" in str(exc) else str(exc)
    return found
"""


async def test_a_network_block_uses_httpx_but_reaches_no_socket_or_event_loop() -> None:
    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b'{"ok": true}'
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
        writer.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(reply, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    try:
        result = await PythonSandbox(limits=LIMITS).run(
            NETWORK_PROBE, {"url": url}, {}, network=True, timeout=10
        )
    finally:
        server.close()
        await server.wait_closed()

    assert result.outputs == {
        "status": 200,
        "body": {"ok": True},
        "stream": "refused",
        "cookies": "refused",
        "coroutine": "refused",
    }
