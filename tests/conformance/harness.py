"""Run one scenario on one backend and collect its normalized observations.

A *backend* is a namespace with LangGraph's public names (``StateGraph``,
``START``, ``Command``, ``HumanMessage``, ``InMemorySaver`` ...):
:func:`langgraph_backend` gathers them from the real ``langgraph`` and
``langchain_core`` packages, :func:`flowcore_backend` is the module
``flowcore.compat.langgraph`` itself.

A *scenario* is a function ``(lg, rec)`` (sync or async) written once against
that namespace and registered with :func:`scenario`. It builds and runs graphs
through ``lg`` and reports what it saw through the :class:`Recorder` ``rec``,
whose helpers (``invoke``, ``stream``, ``state``, ``history``, ``raises`` and
their async twins) catch exceptions as type names and normalize everything as
it is recorded.
"""

import asyncio
import inspect
import traceback
import types
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .normalize import Normalizer, normalize_stream

__all__ = [
    "REGISTRY",
    "RESULTS",
    "Recorder",
    "Run",
    "Scenario",
    "flowcore_backend",
    "langgraph_backend",
    "let_siblings_finish",
    "run_scenario",
    "scenario",
]

ScenarioFn = Callable[[Any, "Recorder"], Awaitable[None] | None]


@dataclass(frozen=True)
class Scenario:
    """A registered scenario: ``theme.name`` is its id in test output."""

    name: str
    theme: str
    fn: ScenarioFn
    tags: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.theme}.{self.name}"


REGISTRY: dict[str, Scenario] = {}
"""Every registered scenario by id, in registration order."""

RESULTS: dict[str, str] = {}
"""Outcome of each differential test this session: "match", "mismatch" or "skipped"."""


def scenario(*, tags: Iterable[str] = ()) -> Callable[[ScenarioFn], ScenarioFn]:
    """Register a ``scenario_*`` function; its module's last dotted part is the theme."""

    def register(fn: ScenarioFn) -> ScenarioFn:
        name = fn.__name__.removeprefix("scenario_")
        theme = fn.__module__.rsplit(".", 1)[-1]
        entry = Scenario(name=name, theme=theme, fn=fn, tags=tuple(tags))
        if entry.id in REGISTRY:
            raise ValueError(f"scenario {entry.id} is registered twice; rename one of them")
        REGISTRY[entry.id] = entry
        return fn

    return register


def langgraph_backend() -> types.SimpleNamespace:
    """LangGraph's public names, gathered from the real packages."""
    from langchain_core import messages
    from langgraph import config, errors, graph
    from langgraph import types as lg_types
    from langgraph.checkpoint import memory
    from langgraph.graph import message

    names: dict[str, Any] = {"backend": "langgraph"}
    for module, attrs in [
        (graph, ["StateGraph", "START", "END", "MessagesState", "add_messages"]),
        (message, ["REMOVE_ALL_MESSAGES"]),
        (lg_types, ["Send", "Command", "interrupt", "RetryPolicy", "Interrupt"]),
        (
            errors,
            ["GraphRecursionError", "InvalidUpdateError", "GraphInterrupt", "EmptyInputError"],
        ),
        (memory, ["InMemorySaver", "MemorySaver"]),
        (config, ["get_stream_writer", "get_config"]),
        (
            messages,
            [
                "AnyMessage",
                "BaseMessage",
                "HumanMessage",
                "AIMessage",
                "ToolMessage",
                "SystemMessage",
                "RemoveMessage",
            ],
        ),
    ]:
        for attr in attrs:
            names[attr] = getattr(module, attr)
    return types.SimpleNamespace(**names)


def flowcore_backend() -> Any:
    """``flowcore.compat.langgraph`` itself (raises ImportError while it does not exist)."""
    import importlib

    module = importlib.import_module("flowcore.compat.langgraph")
    if not hasattr(module, "StateGraph"):
        # The package directory exists before its __init__ does (a namespace package).
        raise ImportError("flowcore.compat.langgraph does not export StateGraph yet")
    return module


@dataclass
class Recorder:
    """What a scenario saw, normalized as it is recorded, in order."""

    observations: list[tuple[str, Any]] = field(default_factory=list)
    norm: Normalizer = field(default_factory=Normalizer)

    def record(self, label: str, value: Any) -> None:
        """Record any value (normalized now, so later mutation cannot change it)."""
        self.observations.append((label, self.norm(value)))

    def _raised(self, label: str, exc: BaseException) -> None:
        self.observations.append((label, {"raised": type(exc).__name__}))

    # -- sync helpers -----------------------------------------------------------------

    def invoke(self, label: str, graph: Any, inp: Any, config: Any = None, **kw: Any) -> Any:
        """``graph.invoke``; records the result or the exception's type name."""
        try:
            result = graph.invoke(inp, config, **kw)
        except Exception as exc:
            self._raised(label, exc)
            return None
        self.record(label, result)
        return result

    def stream(
        self,
        label: str,
        graph: Any,
        inp: Any,
        config: Any = None,
        *,
        stream_mode: str | Sequence[str] = "values",
        subgraphs: bool = False,
        **kw: Any,
    ) -> list[Any]:
        """``graph.stream``; records the chunks by the stream rules, then any exception."""
        chunks: list[Any] = []
        error: BaseException | None = None
        try:
            for chunk in graph.stream(
                inp, config, stream_mode=stream_mode, subgraphs=subgraphs, **kw
            ):
                chunks.append(chunk)
        except Exception as exc:
            error = exc
        self._stream_done(label, chunks, stream_mode, subgraphs, error)
        return chunks

    def _stream_done(
        self,
        label: str,
        chunks: list[Any],
        stream_mode: str | Sequence[str],
        subgraphs: bool,
        error: BaseException | None,
    ) -> None:
        self.observations.append(
            (label, normalize_stream(self.norm, chunks, stream_mode, subgraphs=subgraphs))
        )
        if error is not None:
            self._raised(f"{label} error", error)

    def state(
        self, label: str, graph: Any, config: Any, *, metadata: bool = False, tasks: bool = False
    ) -> Any:
        """``graph.get_state``: values, next and interrupts (optionally metadata, tasks)."""
        try:
            snap = graph.get_state(config)
        except Exception as exc:
            self._raised(label, exc)
            return None
        self.observations.append((label, self.norm.snapshot(snap, metadata=metadata, tasks=tasks)))
        return snap

    def history(self, label: str, graph: Any, config: Any, **kw: Any) -> list[Any]:
        """``graph.get_state_history``, newest first: (step, source, next) of each."""
        try:
            snaps = list(graph.get_state_history(config, **kw))
        except Exception as exc:
            self._raised(label, exc)
            return []
        self.observations.append((label, [self._history_entry(s) for s in snaps]))
        return snaps

    def _history_entry(self, snap: Any) -> Any:
        meta = snap.metadata or {}
        return {
            "step": meta.get("step"),
            "source": meta.get("source"),
            "next": self.norm(snap.next),
            "values": self.norm(snap.values),
        }

    def raises(self, label: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Call ``fn``; record the exception's type name, or "no exception"."""
        try:
            result = fn(*args, **kw)
        except Exception as exc:
            self._raised(label, exc)
            return None
        self.observations.append((label, "no exception"))
        return result

    # -- async helpers ----------------------------------------------------------------

    async def ainvoke(self, label: str, graph: Any, inp: Any, config: Any = None, **kw: Any) -> Any:
        """``graph.ainvoke``; records the result or the exception's type name."""
        try:
            result = await graph.ainvoke(inp, config, **kw)
        except Exception as exc:
            self._raised(label, exc)
            return None
        self.record(label, result)
        return result

    async def astream(
        self,
        label: str,
        graph: Any,
        inp: Any,
        config: Any = None,
        *,
        stream_mode: str | Sequence[str] = "values",
        subgraphs: bool = False,
        **kw: Any,
    ) -> list[Any]:
        """``graph.astream``; records the chunks by the stream rules, then any exception."""
        chunks: list[Any] = []
        error: BaseException | None = None
        try:
            async for chunk in graph.astream(
                inp, config, stream_mode=stream_mode, subgraphs=subgraphs, **kw
            ):
                chunks.append(chunk)
        except Exception as exc:
            error = exc
        self._stream_done(label, chunks, stream_mode, subgraphs, error)
        return chunks

    async def astate(
        self, label: str, graph: Any, config: Any, *, metadata: bool = False, tasks: bool = False
    ) -> Any:
        """``graph.aget_state``: values, next and interrupts (optionally metadata, tasks)."""
        try:
            snap = await graph.aget_state(config)
        except Exception as exc:
            self._raised(label, exc)
            return None
        self.observations.append((label, self.norm.snapshot(snap, metadata=metadata, tasks=tasks)))
        return snap


@dataclass(frozen=True)
class Run:
    """The outcome of one scenario on one backend."""

    observations: list[tuple[str, Any]]
    escaped: str | None = None
    """Traceback of an exception the scenario did not catch (a broken scenario or backend)."""


def run_scenario(entry: Scenario, backend: Any) -> Run:
    """Run ``entry`` on ``backend`` in a fresh recorder (async scenarios in a new loop)."""
    rec = Recorder()
    escaped = None
    try:
        result = entry.fn(backend, rec)
        if inspect.isawaitable(result):
            asyncio.run(_await(result))
    except Exception as exc:
        rec.observations.append(("escaped exception", {"raised": type(exc).__name__}))
        escaped = traceback.format_exc()
    return Run(observations=rec.observations, escaped=escaped)


async def _await(awaitable: Awaitable[None]) -> None:
    await awaitable


SIBLING_TURNS = 50
"""Event-loop turns that are plenty for a finished sibling's writes to be taken in."""


async def let_siblings_finish(turns: int = SIBLING_TURNS) -> None:
    """Yield to the event loop ``turns`` times, so siblings that can finish have finished.

    Counted, not timed: a node that sleeps a few ms to let its siblings finish first
    loses that race on a busy machine, where the timer is already due on the next turn.
    """
    for _ in range(turns):
        await asyncio.sleep(0)
