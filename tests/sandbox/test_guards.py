"""Spec: what block code can reach at run time, through the guards of flowcore.sandbox.guards.

These run compiled block code in this process with the block's globals, as
the worker does, so they cover the guards one rule at a time; the payload
suites run whole blocks through real workers.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import textwrap
import types
from typing import Any

import pytest

from flowcore.sandbox.guards import MODULE_ATTRIBUTES, compile_block, restricted_globals

MODULES = set(MODULE_ATTRIBUTES) - {"httpx"}


def run_block(source: str, inputs: Any = None) -> Any:
    code, problems = compile_block(source)
    assert problems == [], problems
    scope = restricted_globals(MODULES)
    exec(code, scope)
    result = scope["execute"](inputs or {}, {})
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


def block(body: str, imports: str = "") -> str:
    lines = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return f"{imports}\ndef execute(inputs, context):\n{lines}\n"


def test_an_import_binds_only_the_allowlisted_names() -> None:
    importer = restricted_globals(MODULES)["__builtins__"]["__import__"]

    for module in MODULES:
        view = importer(module)
        assert {n for n in vars(view) if not n.startswith("_")} <= MODULE_ATTRIBUTES[module]
    assert "update_wrapper" not in vars(importer("functools"))


@pytest.mark.parametrize(
    ("expression", "imports"),
    [
        ("tools.update_wrapper", "import functools\ntools = functools"),
        ("tools.singledispatch", "import functools\ntools = functools"),
        ("tools.namedtuple", "import collections\ntools = collections"),
        ("tools.codecs", "import json\ntools = json"),
        ("tools.sys", "import statistics\ntools = statistics"),
        ("tools.system", "import os\ntools = os"),
    ],
)
def test_a_renamed_module_still_shows_only_its_allowlist(expression: str, imports: str) -> None:
    with pytest.raises(AttributeError):
        run_block(block(f"return {expression}", imports))


def test_the_os_module_is_a_read_only_environment_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLOWCORE_GUARD_TEST", "visible")
    source = block(
        """
        env = os.environ
        return {"get": os.getenv("FLOWCORE_GUARD_TEST"), "item": env["FLOWCORE_GUARD_TEST"],
                "missing": os.getenv("NOPE", "default")}
        """,
        "import os",
    )

    assert run_block(source) == {"get": "visible", "item": "visible", "missing": "default"}
    with pytest.raises(TypeError):
        run_block(block("os.environ['X'] = '1'\nreturn {}", "import os"))


def test_imported_modules_cannot_be_changed() -> None:
    with pytest.raises(TypeError):
        run_block(block("json.dumps = len\nreturn {}", "import json"))


@pytest.mark.parametrize(
    "body",
    [
        "g = (x for x in [1])\nreturn getattr(g, 'gi_frame')",
        "g = (x for x in [1])\npick = getattr\nreturn pick(g, 'gi_running')",
        "g = (x for x in [1])\npick = getattr\nreturn pick(g, 'send')",
        "pick = getattr\nreturn pick(int, 'mro')",
        "pick = getattr\nreturn pick('{0}', 'format')",
        "pick = getattr\nreturn pick(str, 'format_map')",
    ],
)
def test_frames_coroutines_and_format_are_out_of_reach(body: str) -> None:
    with pytest.raises(AttributeError, match="not available in a sandboxed block"):
        run_block(block(body))


def test_an_allowed_object_holding_a_module_does_not_hand_it_over() -> None:
    # AttributeError.obj is a plain attribute; here it would be a real module.
    import json as real_json

    source = block("pick = getattr\nreturn pick(inputs['error'], 'obj')")
    error = AttributeError("x", name="y", obj=real_json)

    with pytest.raises(AttributeError, match="of type module"):
        run_block(source, {"error": error})


def test_items_and_iteration_never_yield_a_module_or_a_foreign_builtin() -> None:
    import os as real_os

    with pytest.raises(AttributeError, match="of type module"):
        run_block(block("return inputs['box'][0]"), {"box": [real_os]})
    with pytest.raises(AttributeError, match="of type builtin_function_or_method"):
        run_block(block("for f in inputs['box']:\n    return f"), {"box": [eval]})


def test_objects_of_modules_outside_the_allowlist_are_unreadable() -> None:
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(AttributeError, match="of type _UnixSelectorEventLoop"):
            run_block(block("return inputs['loop'].subprocess_shell"), {"loop": loop})
        with pytest.raises(
            AttributeError, match="reading attributes of type _UnixSelectorEventLoop"
        ):
            run_block(block("return inputs.subprocess_shell"), loop)
    finally:
        loop.close()


def test_blocks_write_to_their_own_objects_and_containers() -> None:
    source = """
from collections import Counter, defaultdict
class Tally:
    def __init__(self):
        self.seen = 0
def execute(inputs, context):
    tally = Tally()
    counts = defaultdict(int)
    for word in inputs["words"]:
        counts[word] = counts[word] + 1
        tally.seen = tally.seen + 1
    top = Counter(inputs["words"]).most_common(1)
    return {"counts": dict(counts), "seen": tally.seen, "top": top}
"""
    assert run_block(source, {"words": ["a", "b", "a"]}) == {
        "counts": {"a": 2, "b": 1},
        "seen": 3,
        "top": [("a", 2)],
    }


def test_await_async_for_and_async_with_run_under_the_guards() -> None:
    source = """
class Session:
    async def __aenter__(self):
        return self
    async def __aexit__(self, *exc):
        return False
async def squares(n):
    for i in range(n):
        yield i, i * i
async def execute(inputs, context):
    total = 0
    async with Session() as session:
        async for i, square in squares(4):
            total = total + square
    return {"total": total}
"""
    _, problems = compile_block(source)

    assert "__aenter__" in str(problems)  # dunder methods stay refused, async or not
    source = source.replace("    async def __aenter__(self):\n        return self\n", "")
    source = source.replace("    async def __aexit__(self, *exc):\n        return False\n", "")
    source = source.replace("class Session:\n", "")
    source = source.replace("    async with Session() as session:\n", "")
    source = source.replace("        async for", "    async for").replace(
        "            total =", "        total ="
    )
    assert run_block(source) == {"total": 14}


def test_datetime_formats_and_parses_though_its_c_code_imports_time() -> None:
    source = block(
        """
        day = datetime.datetime(2020, 1, 2, 3, 4)
        parsed = datetime.datetime.strptime("2021-05-06", "%Y-%m-%d")
        return {"f": day.strftime("%Y-%m-%d %H:%M"), "spec": f"{day:%A}", "p": parsed.day}
        """,
        "import datetime",
    )

    assert run_block(source) == {"f": "2020-01-02 03:04", "spec": "Thursday", "p": 6}
    with pytest.raises(ImportError, match="import of 'time' is not allowed"):
        run_block(block("return {}", "import time"))


def test_a_missing_module_name_says_what_the_module_offers() -> None:
    with pytest.raises(AttributeError) as missing:
        run_block(block("tools = [functools][0]\nreturn tools.wraps", "import functools"))

    assert str(missing.value) == (
        "functools.wraps is not available in a sandboxed block; "
        "functools offers: cache, cmp_to_key, lru_cache, partial, reduce"
    )


def reachable_roots() -> list[object]:
    import collections
    import datetime
    import functools
    import re
    import statistics

    import httpx

    request = httpx.Request("GET", "http://example.invalid/?q=1", headers={"a": "b"})
    response = httpx.Response(200, json={"a": 1}, request=request)
    importer = restricted_globals(set(MODULE_ATTRIBUTES))["__builtins__"]["__import__"]
    return [
        *(importer(module) for module in MODULE_ATTRIBUTES),
        collections.Counter("ab"),
        collections.ChainMap({}),
        re.match("(?P<x>a)", "a"),
        datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
        statistics.NormalDist(),
        functools.partial(len),
        functools.lru_cache()(len),
        request,
        response,
        httpx.HTTPStatusError("m", request=request, response=response),
    ]


def test_nothing_reachable_from_the_allowlist_holds_what_the_guards_refuse() -> None:
    # Builtins such as max() or dict.get() hand out container items unchecked,
    # so no container a block can reach may hold a module, frame, foreign
    # builtin or object of a foreign class. Walk what attributes reach.
    scope = restricted_globals(set(MODULE_ATTRIBUTES))
    read, item = scope["_getattr_"], scope["_getitem_"]
    queue = collections.deque(reachable_roots())
    seen: set[int] = set()
    refused: list[str] = []
    while queue and len(seen) < 20_000:
        obj = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, dict | types.MappingProxyType):
            contents = [*obj.keys(), *obj.values()]
        elif isinstance(obj, list | tuple | set | frozenset):
            contents = list(obj)
        else:
            contents = []
        for value in contents:
            try:
                queue.append(item([value], 0))
            except AttributeError:
                refused.append(f"{type(obj).__name__} holds {value!r:.80}")
        for name in dir(obj):
            with contextlib.suppress(Exception):  # refused, or a property that needs state
                queue.append(read(obj, name))

    assert len(seen) > 1_000
    assert refused == []
