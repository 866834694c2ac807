"""What a running node can reach without arguments: ``interrupt()``, the stream writer, config."""

from __future__ import annotations

import contextvars
import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from flowcore.compat.langgraph._errors import GraphInterrupt
from flowcore.compat.langgraph._interrupt_options import ResponseSchema
from flowcore.compat.langgraph._types import Interrupt
from flowcore.runtime.answers import UNANSWERED, Answers

__all__ = ["TaskScope", "current_scope", "get_config", "get_stream_writer", "interrupt"]

_xxh3: Callable[[bytes], str] | None
try:  # LangGraph's interrupt ids (see TaskScope.interrupt_id); optional
    from xxhash import xxh3_128_hexdigest as _found

    _xxh3 = _found
except ImportError:  # pragma: no cover - xxhash comes with LangGraph installs
    _xxh3 = None


class ScopeHost(Protocol):
    """The run a task belongs to, as its scope needs it."""

    def scope_config(self, task: Any, step: int) -> dict[str, Any]:
        """The config of ``task``, which runs in superstep ``step``."""
        ...

    def write_custom(self, node: str, chunk: Any) -> None:
        """Send a custom stream chunk written by ``node``."""
        ...

    def task_runtime(self, scope: TaskScope) -> Any:
        """The ``Runtime`` the task of ``scope`` sees (see ``_runtime``)."""
        ...


class TaskScope(Answers):
    """The running task: its answers to earlier pauses and where custom chunks go.

    ``resume`` holds the answers given so far, in order; the n-th
    ``interrupt()`` call of the task returns the n-th answer. ``null_resume``
    is a run-level answer (``Command(resume=value)``) taken by the first call
    that has no answer of its own (the runtime's rule:
    :class:`flowcore.runtime.answers.Answers`). The task's id and config are
    only worked out when something asks for them: most nodes never do.
    """

    __slots__ = ("_config", "graphs_run", "host", "pushed", "started_at", "step", "task")

    def __init__(
        self,
        host: ScopeHost,
        task: Any,
        step: int,
        resume: list[Any],
        null_resume: list[Any],
    ) -> None:
        # Answers.__init__, inlined: a scope is made for every task run.
        self.given = resume
        self.unaddressed = null_resume
        self.asked = 0
        self.host = host
        self.task = task
        self.step = step
        self._config: dict[str, Any] | None = None
        # When the task's first attempt started (a Runtime's execution info reports it).
        self.started_at = time.time()
        # Graphs this task has run so far: the n-th (from 0) saves under "|n" (n > 0).
        self.graphs_run = 0
        # Writes push_message made during the call (see _push), ahead of the node's own.
        self.pushed: list[tuple[str, Any]] | None = None

    @property
    def resume(self) -> Sequence[Any]:
        """The answers given to this task so far, in order (those it took included)."""
        return self.given

    @property
    def null_resume(self) -> list[Any]:
        """The run's answers not addressed to any pause, shared by its tasks."""
        shared = self.unaddressed
        assert shared is not None  # a task scope is always given its run's list
        return shared

    @property
    def calls(self) -> int:
        """How many ``interrupt()`` calls this attempt has made (0 starts the task over)."""
        return self.asked

    @calls.setter
    def calls(self, value: int) -> None:
        self.asked = value

    @property
    def task_id(self) -> str:
        """The running task's id."""
        task_id: str = self.task.id
        return task_id

    @property
    def node(self) -> str:
        """The running node's name."""
        name: str = self.task.name
        return name

    @property
    def config(self) -> dict[str, Any]:
        """The node's config, built the first time a node asks for it."""
        if self._config is None:
            self._config = self.host.scope_config(self.task, self.step)
        return self._config

    def get_config(self) -> dict[str, Any]:
        """The same as :attr:`config`, as a method to hand out unevaluated."""
        return self.config

    def writer(self, chunk: Any) -> None:
        """Send ``chunk`` to ``stream_mode="custom"`` consumers."""
        self.host.write_custom(self.task.name, chunk)

    def runtime(self) -> Any:
        """The LangGraph ``Runtime`` of this task, built when a node asks for it."""
        return self.host.task_runtime(self)

    def interrupt_id(self, index: int) -> str:
        """A stable id for the pause of this task that its ``index``-th answer will fill.

        LangGraph's id when the optional ``xxhash`` package is there (the hash of
        the task's checkpoint namespace, and of how many answers it has), so
        ids match across the two; else a SHA-256 of the task id and ``index``.
        """
        ns = getattr(self.host, "ns", None)
        if _xxh3 is None or not isinstance(ns, str):
            return hashlib.sha256(f"{self.task_id}|{index}".encode()).hexdigest()[:32]
        task_ns = (
            f"{ns}|{self.task.name}:{self.task_id}" if ns else f"{self.task.name}:{self.task_id}"
        )
        digest: str = _xxh3((f"{task_ns}|{index}" if index else task_ns).encode())
        return digest


_SCOPE: contextvars.ContextVar[TaskScope | None] = contextvars.ContextVar(
    "flowcore_compat_langgraph_task", default=None
)


def current_scope() -> TaskScope:
    """The task running in this context, or a RuntimeError outside any node."""
    scope = _SCOPE.get()
    if scope is None:
        raise RuntimeError("Called get_config outside of a runnable context")
    return scope


def running_scope() -> TaskScope | None:
    """The task running in this context, or None outside any node."""
    return _SCOPE.get()


def set_scope(scope: TaskScope | None) -> contextvars.Token[TaskScope | None]:
    """Make ``scope`` the running task of this context (the loop does this)."""
    return _SCOPE.set(scope)


def interrupt(value: Any, *, response_schema: Any = None) -> Any:
    """Pause the run and surface ``value``; when resumed, return the answer.

    The node re-runs from its start on resume, so code before the call runs
    again; the n-th call in a node returns the n-th answer. ``response_schema``
    (a JSON Schema dict, or a pydantic model, ``TypedDict`` or dataclass that
    also validates the answer) is shown with the pause; see ``_interrupt_options``.

    Example:
        >>> # def approve(state):
        >>> #     answer = interrupt({"draft": state["draft"]})
        >>> #     return {"approved": answer == "yes"}
    """
    scope = current_scope()
    schema = None if response_schema is None else ResponseSchema.of(response_schema)
    index, answer = scope.ask()
    if answer is not UNANSWERED:
        return answer if schema is None else schema.check(answer)
    shown = None if schema is None else schema.shown
    # Numbered by the answers the task already has: the slot this pause's answer fills.
    slot = min(index, len(scope.resume))
    raise GraphInterrupt((Interrupt(value, scope.interrupt_id(slot), response_schema=shown),))


def get_stream_writer() -> Callable[[Any], None]:
    """The function that sends a chunk to ``stream_mode="custom"`` consumers.

    Example:
        >>> # def node(state):
        >>> #     get_stream_writer()({"progress": 0.5})
    """
    scope = _SCOPE.get()
    if scope is None:
        return lambda chunk: None
    return scope.writer


def get_config() -> dict[str, Any]:
    """The config of the running node.

    Example:
        >>> # thread = get_config()["configurable"]["thread_id"]
    """
    return current_scope().config
