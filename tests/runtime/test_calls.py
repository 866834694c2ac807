"""Spec: call_node is how every node and router is called, sync or async."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import pytest

from flowcore.runtime import call_node

WHO = contextvars.ContextVar("WHO", default="nobody")


async def test_an_async_function_is_awaited_on_the_loop() -> None:
    loop_thread = threading.get_ident()

    async def node(state: dict[str, Any], *, extra: int) -> dict[str, Any]:
        return {"n": state["n"] + extra, "thread": threading.get_ident()}

    result = await call_node(node, True, ({"n": 1},), {"extra": 2})

    assert result == {"n": 3, "thread": loop_thread}


async def test_a_sync_function_runs_in_a_worker_thread_with_the_callers_context() -> None:
    WHO.set("ada")
    loop_thread = threading.get_ident()

    def node(state: dict[str, Any]) -> tuple[str, bool]:
        return WHO.get(), threading.get_ident() != loop_thread

    assert await call_node(node, False, ({},)) == ("ada", True)


async def test_a_sync_router_may_run_inline_on_the_loop() -> None:
    loop_thread = threading.get_ident()

    def router(state: dict[str, Any]) -> int:
        return threading.get_ident()

    assert await call_node(router, False, ({},), inline=True) == loop_thread


async def test_an_awaitable_handed_back_by_a_sync_function_is_awaited() -> None:
    async def later(value: int) -> int:
        await asyncio.sleep(0)
        return value * 2

    def wrapper(value: int) -> Any:
        return later(value)

    assert await call_node(wrapper, False, (21,)) == 42


async def test_an_error_of_the_function_reaches_the_caller_unchanged() -> None:
    def node(state: Any) -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError) as info:
        await call_node(node, False, (None,))
    assert info.value.args == ("missing",)
