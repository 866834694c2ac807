"""The small data types of LangGraph's API: Send, Command, Interrupt, RetryPolicy, snapshots."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar, Generic, Literal, NamedTuple, TypeVar

__all__ = [
    "END",
    "ROOT",
    "START",
    "Command",
    "Interrupt",
    "Overwrite",
    "PregelTask",
    "RetryPolicy",
    "Send",
    "StateSnapshot",
    "StateUpdate",
    "TimeoutPolicy",
    "default_retry_on",
    "object_update",
    "overwritten",
]

ROOT = "__root__"
"""The one state key of a graph whose schema is a plain type (``StateGraph(int)``)."""
START = "__start__"
"""The virtual node a run starts from."""
END = "__end__"
"""The virtual node a branch ends at."""

N = TypeVar("N")


class Send:
    """Run ``node`` once more in the next superstep, with ``arg`` as its input.

    ``timeout`` (seconds, a ``timedelta`` or a :class:`TimeoutPolicy`)
    replaces the node's own time limits for this one run of it.

    Example:
        >>> Send("write", {"topic": "ducks"})
        Send(node='write', arg={'topic': 'ducks'})
    """

    __slots__ = ("arg", "node", "timeout")

    def __init__(
        self, node: str, arg: Any, *, timeout: float | timedelta | TimeoutPolicy | None = None
    ) -> None:
        self.node = node
        self.arg = arg
        self.timeout = TimeoutPolicy.coerce(timeout)

    def __repr__(self) -> str:
        if self.timeout is None:
            return f"Send(node={self.node!r}, arg={self.arg!r})"
        return f"Send(node={self.node!r}, arg={self.arg!r}, timeout={self.timeout!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Send) and (self.node, self.arg, self.timeout) == (
            other.node,
            other.arg,
            other.timeout,
        )

    def __hash__(self) -> int:
        return hash((self.node, repr(self.arg)))


@dataclass(frozen=True, slots=True)
class Command(Generic[N]):
    """What a node returns to update state and choose where to go next in one value.

    ``update`` is applied like a node's return value; ``goto`` names the
    next node(s) or holds ``Send``s; ``resume`` answers pending
    ``interrupt()`` calls when passed as run input; ``graph=Command.PARENT``
    sends the command to the parent graph.

    Example:
        >>> Command(update={"n": 1}, goto="next").goto
        'next'
    """

    graph: str | None = None
    update: Any | None = None
    resume: Any | None = None
    goto: Send | Sequence[Send | N] | N = ()

    PARENT: ClassVar[str] = "__parent__"

    def __repr__(self) -> str:
        # Only the fields that say something, as LangGraph prints a Command.
        shown = ((f, getattr(self, f)) for f in ("graph", "update", "resume", "goto"))
        return f"Command({', '.join(f'{k}={v!r}' for k, v in shown if v)})"

    def update_pairs(self) -> list[tuple[str, Any]]:
        """``update`` as (key, value) pairs, in order.

        Example:
            >>> Command(update={"a": 1}).update_pairs()
            [('a', 1)]
        """
        update = self.update
        if update is None:
            return []
        if isinstance(update, dict):
            return list(update.items())
        if isinstance(update, list | tuple) and all(
            isinstance(p, tuple) and len(p) == 2 for p in update
        ):
            return [(str(k), v) for k, v in update]
        fields = _object_fields(update)
        if fields is not None:
            return list(fields.items())
        raise TypeError(f"Command.update must be a dict or a list of pairs, got {update!r}")

    def goto_targets(self) -> list[Any]:
        """``goto`` as a list of node names and ``Send``s.

        Example:
            >>> Command(goto=["a", "b"]).goto_targets()
            ['a', 'b']
        """
        goto = self.goto
        if isinstance(goto, str | Send):
            return [goto]
        return list(goto)  # type: ignore[arg-type]


def _object_fields(value: Any) -> dict[str, Any] | None:
    """The update a pydantic model or dataclass instance makes, LangGraph's way.

    A field left at ``None`` is no update unless its default is not ``None`` or
    (pydantic) it was set explicitly: ``Update(query="q")`` of a model whose
    other fields default to ``None`` writes only ``query``.
    """
    fields = getattr(type(value), "model_fields", None)
    if isinstance(fields, dict) and callable(getattr(value, "model_dump", None)):
        given = value.model_fields_set
        return {
            k: v
            for k, info in fields.items()
            if (v := getattr(value, k)) is not None or info.default is not None or k in given
        }
    specs = getattr(value, "__dataclass_fields__", None)
    if isinstance(specs, dict):
        return {
            k: v
            for k, spec in specs.items()
            if (v := getattr(value, k)) is not None or spec.default is not None
        }
    return None


DEFAULT_INTERRUPT_ID = "placeholder-id"
"""The id of an ``Interrupt`` built without one."""


def object_update(value: Any, keys: Collection[str]) -> list[tuple[str, Any]] | None:
    """The writes of a node result that is a pydantic model or dataclass (None if neither).

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Update:
        ...     a: int | None = None
        ...     b: int | None = None
        >>> object_update(Update(a=1), {"a", "b"})
        [('a', 1)]
    """
    fields = _object_fields(value)
    if fields is None:
        return None
    return [(k, v) for k, v in fields.items() if k in keys]


class Interrupt:
    """A pause raised by ``interrupt(value)``; ``id`` answers it in ``Command(resume={id: ...})``.

    ``response_schema`` is the JSON Schema the answer should match, when the
    node gave one. Keyword arguments of LangGraph's pre-1.0 interrupts
    (``ns``, ``when``, ``resumable``) are accepted so old checkpoints load; an
    ``ns`` without an ``id`` gives the id LangGraph derives from it.

    Example:
        >>> Interrupt("Approve?", id="abc")
        Interrupt(value='Approve?', id='abc', response_schema=None)
    """

    __slots__ = ("id", "response_schema", "value")

    def __init__(
        self,
        value: Any,
        id: str = DEFAULT_INTERRUPT_ID,
        *,
        response_schema: Any = None,
        **legacy: Any,
    ) -> None:
        self.value = value
        self.response_schema = response_schema
        ns = legacy.get("ns")
        if id == DEFAULT_INTERRUPT_ID and isinstance(ns, Sequence) and ns is not None:
            from flowcore.compat.langgraph._interrupt_options import legacy_interrupt_id

            id = legacy_interrupt_id(ns)
        self.id = id

    @classmethod
    def from_ns(cls, value: Any, ns: str, *, response_schema: Any = None) -> Interrupt:
        """The interrupt LangGraph raises in the task of checkpoint namespace ``ns``."""
        from flowcore.compat.langgraph._interrupt_options import legacy_interrupt_id

        return cls(value, legacy_interrupt_id(ns), response_schema=response_schema)

    @property
    def interrupt_id(self) -> str:
        """Deprecated spelling of :attr:`id`."""
        from flowcore.compat.langgraph._warnings import LangGraphDeprecatedSinceV10, warn_deprecated

        message = "`interrupt_id` is deprecated. Use `id` instead."
        warn_deprecated(LangGraphDeprecatedSinceV10, message)
        return self.id

    def __repr__(self) -> str:
        return (
            f"Interrupt(value={self.value!r}, id={self.id!r}, "
            f"response_schema={self.response_schema!r})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Interrupt) and (self.value, self.id, self.response_schema) == (
            other.value,
            other.id,
            other.response_schema,
        )

    def __hash__(self) -> int:
        return hash(self.id)


OVERWRITE = "__overwrite__"


@dataclass(frozen=True, slots=True)
class Overwrite:
    """A write that replaces a reducer key's value instead of being folded into it.

    One per key and superstep; ``{"__overwrite__": value}`` (and the JSON form of
    this class) mean the same, so the intent survives a trip through JSON.

    Example:
        >>> Overwrite(["b"]).value
        ['b']
    """

    value: Any
    type: str = OVERWRITE


def overwritten(write: Any) -> tuple[bool, Any]:
    """``(True, value)`` when ``write`` is an :class:`Overwrite` in any of its forms.

    Example:
        >>> overwritten({"__overwrite__": [1]}), overwritten([1])
        ((True, [1]), (False, None))
    """
    if isinstance(write, Overwrite):
        return True, write.value
    if isinstance(write, dict):
        if len(write) == 1 and OVERWRITE in write:
            return True, write[OVERWRITE]
        if write.get("type") == OVERWRITE and "value" in write:
            return True, write["value"]
    return False, None


def default_retry_on(exc: Exception) -> bool:
    """LangGraph's default: retry anything but programming and lookup errors.

    Example:
        >>> default_retry_on(ValueError("bad")), default_retry_on(ConnectionError())
        (False, True)
    """
    if isinstance(exc, ConnectionError):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int) and type(exc).__name__ in ("HTTPStatusError", "HTTPError"):
        return 500 <= status < 600
    return not isinstance(
        exc,
        ValueError
        | TypeError
        | ArithmeticError
        | ImportError
        | LookupError
        | NameError
        | SyntaxError
        | RuntimeError
        | ReferenceError
        | StopIteration
        | StopAsyncIteration
        | OSError,
    )


class RetryPolicy(NamedTuple):
    """How a failing node is retried: backoff from ``initial_interval`` up to ``max_attempts``.

    Example:
        >>> RetryPolicy(max_attempts=5).max_attempts
        5
    """

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: type[Exception] | Sequence[type[Exception]] | Callable[[Exception], bool] = (
        default_retry_on
    )


class PregelTask(NamedTuple):
    """A task of a snapshot: a node that is due, with its error, pauses or result."""

    id: str
    name: str
    path: tuple[Any, ...]
    error: Exception | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: Any | None = None


class StateUpdate(NamedTuple):
    """One write of ``bulk_update_state``: ``values`` as if node ``as_node`` returned them.

    Example:
        >>> StateUpdate({"n": 1}, as_node="a").as_node
        'a'
    """

    values: dict[str, Any] | Any
    as_node: str | None = None
    task_id: str | None = None


class StateSnapshot(NamedTuple):
    """A thread's state at one checkpoint, what runs next, and where it came from."""

    values: dict[str, Any] | Any
    next: tuple[str, ...]
    config: dict[str, Any]
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_config: dict[str, Any] | None
    tasks: tuple[PregelTask, ...]
    interrupts: tuple[Interrupt, ...]


def _seconds(value: float | timedelta | None, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        raise TypeError(f"{field} must be seconds (a number) or a timedelta, got {value!r}")
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds <= 0:
        raise ValueError(f"{field} must be greater than 0, got {value!r}")
    return seconds


@dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """Time limits of one node attempt: a hard ``run_timeout`` and an ``idle_timeout``.

    ``idle_timeout`` starts over at each ``runtime.heartbeat()``; ``run_timeout``
    never does. Either may be seconds or a ``timedelta``; :meth:`coerce` turns
    them into positive float seconds.

    Example:
        >>> TimeoutPolicy.coerce(2)
        TimeoutPolicy(run_timeout=2.0, idle_timeout=None, refresh_on='auto')
    """

    run_timeout: float | timedelta | None = None
    idle_timeout: float | timedelta | None = None
    refresh_on: Literal["auto", "heartbeat"] = "auto"

    @classmethod
    def coerce(cls, value: float | timedelta | TimeoutPolicy | None) -> TimeoutPolicy | None:
        """``value`` as a policy with float seconds (a bare number is a ``run_timeout``).

        None, or a policy with neither timeout, gives None; an already coerced
        policy is returned as it is; a timeout that is not above 0 raises
        ``ValueError``.

        Example:
            >>> TimeoutPolicy.coerce(timedelta(milliseconds=250)).run_timeout
            0.25
        """
        if value is None:
            return None
        policy = value if isinstance(value, TimeoutPolicy) else cls(run_timeout=value)
        if policy.refresh_on not in ("auto", "heartbeat"):
            raise ValueError(f"refresh_on must be 'auto' or 'heartbeat', got {policy.refresh_on!r}")
        run = _seconds(policy.run_timeout, "run_timeout")
        idle = _seconds(policy.idle_timeout, "idle_timeout")
        if run is None and idle is None:
            return None
        if type(policy.run_timeout) is type(run) and type(policy.idle_timeout) is type(idle):
            # Already float seconds: the same (frozen) instance serves.
            return policy
        return cls(run_timeout=run, idle_timeout=idle, refresh_on=policy.refresh_on)
