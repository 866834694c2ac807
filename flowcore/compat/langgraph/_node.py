"""Calling one node the way LangGraph does, and turning what it returns into channel writes."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import random
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from flowcore.compat.langgraph._errors import (
    GraphBubbleUp,
    InvalidUpdateError,
    NodeTimeoutError,
    ParentCommand,
)
from flowcore.compat.langgraph._types import (
    END,
    ROOT,
    Command,
    RetryPolicy,
    Send,
    TimeoutPolicy,
    object_update,
)
from flowcore.runtime import AttemptTimeout, attempt_with_retries, call_node

__all__ = [
    "TASKS",
    "LangGraphRetryRule",
    "branch_channel",
    "call_with_config",
    "called_from_sync",
    "control_writes",
    "describe_callable",
    "retry_call",
    "update_writes",
]

T = TypeVar("T")

TASKS = "__pregel_tasks"
"""The channel that carries ``Send``s to the next superstep."""


def branch_channel(node: str) -> str:
    """The trigger channel of ``node``."""
    return f"branch:to:{node}"


def update_writes(value: Any, keys: Collection[str]) -> list[tuple[str, Any]]:
    """The state writes a node's return value makes (keys outside the state are dropped).

    Example:
        >>> update_writes({"a": 1, "zz": 2}, ["a"])
        [('a', 1)]
    """
    if value is None:
        return []
    known = keys if isinstance(keys, frozenset | set) else set(keys)
    if ROOT in known and len(known) == 1:
        # A root-state graph (its one key is ROOT): the value itself is the write.
        return _root_writes(value)
    if isinstance(value, dict):
        return [(k, v) for k, v in value.items() if k in known]
    if isinstance(value, Command):
        if value.graph == Command.PARENT:
            return []
        return [(k, v) for k, v in value.update_pairs() if k in known]
    if isinstance(value, list | tuple) and value and any(isinstance(i, Command) for i in value):
        writes: list[tuple[str, Any]] = []
        for item in value:
            writes.extend(update_writes(item, keys))
        return writes
    items = object_update(value, keys)
    if items is not None:
        return items
    raise InvalidUpdateError(f"Expected dict, got {value}")


def _root_writes(value: Any) -> list[tuple[str, Any]]:
    """A root-state graph's writes: the value itself, or each Command's update."""
    if isinstance(value, Command):
        if value.graph == Command.PARENT or value.update is None:
            return []
        return [(ROOT, value.update)]
    if isinstance(value, list | tuple) and value and any(isinstance(i, Command) for i in value):
        return [w for item in value for w in _root_writes(item)]
    return [(ROOT, value)]


def control_writes(value: Any) -> list[tuple[str, Any]]:
    """The ``goto`` writes of a returned ``Command`` (or list of them).

    Example:
        >>> control_writes(Command(goto="b"))
        [('branch:to:b', None)]
    """
    commands: list[Command[Any]] = []
    if isinstance(value, Command):
        commands = [value]
    elif isinstance(value, list | tuple):
        commands = [c for c in value if isinstance(c, Command)]
    writes: list[tuple[str, Any]] = []
    for command in commands:
        if command.graph == Command.PARENT:
            continue
        for target in command.goto_targets():
            writes.extend(target_writes([target]))
    return writes


def target_writes(targets: Sequence[Any]) -> list[tuple[str, Any]]:
    """Writes that trigger each target: a node name, ``END`` (nothing) or a ``Send``."""
    writes: list[tuple[str, Any]] = []
    for target in targets:
        if isinstance(target, Send):
            writes.append((TASKS, target))
        elif target != END:
            writes.append((branch_channel(str(target)), None))
    return writes


_BUILT_ON_ASK = frozenset({"runtime"})
"""Extras given to :func:`call_with_config` as zero-argument builders."""


def describe_callable(func: Callable[..., Any]) -> tuple[frozenset[str], bool]:
    """The parameter names of ``func`` and whether calling it gives a coroutine."""
    try:
        params = inspect.signature(func).parameters.values()
        names = frozenset(p.name for p in params if p.kind != inspect.Parameter.VAR_POSITIONAL)
    except (TypeError, ValueError):
        names = frozenset()
    is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - callable objects
    )
    return names, is_async


async def call_with_config(
    func: Callable[..., Any],
    arg: Any,
    config: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
    extras: Mapping[str, Any],
    shape: tuple[frozenset[str], bool] | None = None,
    *,
    inline: bool = False,
) -> Any:
    """Call a node or router: ``func(arg)``, passing ``config`` and extras it asks for by name.

    Sync functions run in a worker thread (the context, and so ``interrupt()``,
    goes with them), or on the event loop with ``inline`` (routers: they are
    meant to be quick); coroutines are awaited. ``shape`` is
    :func:`describe_callable`'s answer, when the caller has it cached.
    """
    names, is_async = shape if shape is not None else describe_callable(func)
    kwargs: dict[str, Any] = {}
    if names:
        if "config" in names:
            # A callable config is built only now, when the function asks for it.
            kwargs["config"] = config() if callable(config) else config
        for key, value in extras.items():
            if key in names:
                # A runtime is handed over as its builder: most nodes never ask for one.
                kwargs[key] = value() if key in _BUILT_ON_ASK else value
    return await call_node(func, is_async, (arg,), kwargs, inline=inline)


def _retryable(policy: RetryPolicy, exc: Exception) -> bool:
    retry_on = policy.retry_on
    if isinstance(retry_on, type):
        return isinstance(exc, retry_on)
    if isinstance(retry_on, Sequence):
        return isinstance(exc, tuple(retry_on))
    return bool(retry_on(exc))


class LangGraphRetryRule:
    """LangGraph's retry policies as the runtime's retry rule.

    The first policy whose ``retry_on`` matches the error decides: give up
    after its ``max_attempts`` (counting every attempt of the task), else wait
    ``initial_interval * backoff_factor ** (failures - 1)`` capped at
    ``max_interval``, plus up to a second of jitter.

    Example:
        >>> LangGraphRetryRule([RetryPolicy(initial_interval=0.5, jitter=False)]
        ...     ).pause_before_retry(ValueError(), 2)
        0.75
    """

    __slots__ = ("policies", "translate")

    def __init__(
        self,
        policies: Sequence[RetryPolicy],
        translate: Callable[[Exception], Exception] | None = None,
    ) -> None:
        self.policies = policies
        # The runtime's own errors (a timed-out attempt) as the node's users see them.
        self.translate = translate

    def pause_before_retry(self, error: Exception, failures: int) -> float | None:
        """Seconds before the next attempt, or None when no policy retries ``error``."""
        if self.translate is not None:
            error = self.translate(error)
        chosen = next((p for p in self.policies if _retryable(p, error)), None)
        if chosen is None or failures >= chosen.max_attempts:
            return None
        interval = min(
            chosen.max_interval, chosen.initial_interval * chosen.backoff_factor ** (failures - 1)
        )
        # Jitter only spreads retries of concurrent callers apart; it is not secret.
        return interval + (random.uniform(0, 1) if chosen.jitter else 0)


def _timeout_translator(node: str, timeout: TimeoutPolicy) -> Callable[[Exception], Exception]:
    run_s, idle_s = _float(timeout.run_timeout), _float(timeout.idle_timeout)

    def translate(error: Exception) -> Exception:
        if not isinstance(error, AttemptTimeout):
            return error
        return NodeTimeoutError(
            node, error.elapsed, kind=error.kind, idle_timeout=idle_s, run_timeout=run_s
        )

    return translate


async def retry_call(
    attempt: Callable[[], Any],
    policy: RetryPolicy | Sequence[RetryPolicy] | None,
    timeout: TimeoutPolicy | None = None,
    node: str = "",
) -> Any:
    """Run ``attempt()`` until it succeeds or the policy gives up (control flow is not retried).

    With a ``timeout`` (a coerced :class:`TimeoutPolicy`) each attempt is
    capped by the runtime, and one that runs past a limit fails with
    :class:`NodeTimeoutError` naming ``node`` (which the policy may retry).
    """
    policies = [policy] if isinstance(policy, RetryPolicy) else list(policy or ())

    async def call(_attempt: int) -> Any:
        return await attempt()

    translate = None if timeout is None else _timeout_translator(node, timeout)
    rule = LangGraphRetryRule(policies, translate) if policies else None
    try:
        result, _ = await attempt_with_retries(
            call,
            rule,
            timeout=None if timeout is None else _float(timeout.run_timeout),
            idle_timeout=None if timeout is None else _float(timeout.idle_timeout),
            passthrough=(GraphBubbleUp, ParentCommand),
            sleep=_blocking_backoff if _SYNC_CALLER.get() else None,
        )
    except AttemptTimeout as exc:
        if translate is None:
            raise
        # The runtime's own error is a detail of how the limit is kept: not the cause to show.
        raise translate(exc) from None
    return result


_SYNC_CALLER: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "flowcore_compat_sync_caller", default=False
)


async def called_from_sync(work: Awaitable[T]) -> T:
    """Await ``work`` as the run of a sync call (``invoke``, ``stream``).

    Such a run waits between retries with ``time.sleep`` (in a worker thread),
    as LangGraph's sync runner does, so code that patches ``time.sleep`` to skip
    backoff works the same.
    """
    _SYNC_CALLER.set(True)
    return await work


async def _blocking_backoff(seconds: float) -> None:
    # time.sleep is looked up at each call: a patched one is the one used.
    await asyncio.to_thread(time.sleep, seconds)


def _float(value: Any) -> float | None:
    """Seconds of a coerced policy field (float or None)."""
    return None if value is None else float(value)
