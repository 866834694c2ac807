"""``CompiledGraph``: the immutable, validated graph that runs.

One compiled graph can run many times, also concurrently: every run keeps
its own state in its own :class:`~flowcore.scheduler.engine.RunEngine`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from flowcore._shown import shown
from flowcore.checkpoint.protocol import Checkpointer, ThreadLease
from flowcore.checkpoint.serde import check_text_and_nesting
from flowcore.errors import InvalidInputError, SerializationError
from flowcore.graph.commands import Command
from flowcore.graph.spec import EdgeSpec, NodeSpec, RouterSpec
from flowcore.graph.threads import (
    StateSnapshot,
    check_durability,
    check_thread_id,
    get_state,
    open_thread,
    state_history,
    update_state,
)
from flowcore.graph.topology import Topology
from flowcore.interrupts import Resume
from flowcore.result import RunResult
from flowcore.runtime.leases import hold_thread
from flowcore.runtime.stream import EventStream
from flowcore.scheduler.engine import RunEngine
from flowcore.scheduler.options import ErrorPolicy, RunOptions, SchedulingMode
from flowcore.scheduler.persistence import Durability
from flowcore.scheduler.thread_run import ThreadRun
from flowcore.secrets import Redactor
from flowcore.state.schema import StateSchema

__all__ = ["CompiledGraph", "RunStream"]

RunInput = Mapping[str, Any] | BaseModel | None


class CompiledGraph:
    """A validated graph, ready to run; build one with ``Graph.compile()``.

    Example:
        >>> from typing import TypedDict
        >>> from flowcore import Graph, START
        >>> class S(TypedDict):
        ...     x: int
        >>> g = Graph(S).add_node("inc", lambda s: {"x": s["x"] + 1}).add_edge(START, "inc")
        >>> g.compile().run_sync({"x": 41}).state["x"]
        42
    """

    __slots__ = (
        "checkpointer",
        "edges",
        "interrupt_after",
        "interrupt_before",
        "name",
        "nodes",
        "routers",
        "routers_by_source",
        "schema",
        "topology",
        "version",
    )

    def __init__(
        self,
        *,
        name: str,
        version: str,
        schema: StateSchema,
        nodes: Sequence[NodeSpec],
        edges: Sequence[EdgeSpec],
        routers: Sequence[RouterSpec],
        topology: Topology,
        checkpointer: Checkpointer | None = None,
        interrupt_before: frozenset[str] = frozenset(),
        interrupt_after: frozenset[str] = frozenset(),
    ) -> None:
        self.checkpointer = checkpointer
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.name = name
        self.version = version
        self.schema = schema
        self.nodes: Mapping[str, NodeSpec] = MappingProxyType({n.name: n for n in nodes})
        self.edges: tuple[EdgeSpec, ...] = tuple(edges)
        self.routers: tuple[RouterSpec, ...] = tuple(routers)
        by_source: dict[str, list[RouterSpec]] = {}
        for r in routers:
            by_source.setdefault(r.source, []).append(r)
        self.routers_by_source: Mapping[str, tuple[RouterSpec, ...]] = MappingProxyType(
            {k: tuple(v) for k, v in by_source.items()}
        )
        self.topology = topology

    def __repr__(self) -> str:
        return f"<CompiledGraph {self.name!r} v{self.version} nodes={len(self.nodes)}>"

    def to_mermaid(self) -> str:
        """This graph as Mermaid ``flowchart TD`` text; joins, routes and loops are marked.

        See :func:`flowcore.graph.mermaid.graph_to_mermaid` for how each part is drawn.

        Example:
            >>> from typing import TypedDict
            >>> from flowcore import Graph, START
            >>> class S(TypedDict):
            ...     x: int
            >>> g = Graph(S).add_node("a", lambda s: None).add_edge(START, "a")
            >>> g.compile().to_mermaid().splitlines()[-1]
            '    __start__ --> n_a'
        """
        from flowcore.graph.mermaid import graph_to_mermaid

        return graph_to_mermaid(self)

    # ------------------------------------------------------------------ runs
    def _options(
        self,
        *,
        config: Mapping[str, Any] | None,
        mode: SchedulingMode,
        on_error: ErrorPolicy,
        max_concurrency: int | None,
        recursion_limit: int | None,
        thread_id: str | None,
        durability: Durability,
        redactor: Redactor | None = None,
    ) -> RunOptions:
        for option, value in (("mode", mode), ("on_error", on_error)):
            if not isinstance(value, str):
                raise InvalidInputError(
                    f"{option}={shown(value)} must be a string; see run()'s documentation for "
                    "the values it takes"
                )
        for option, count in (
            ("max_concurrency", max_concurrency),
            ("recursion_limit", recursion_limit),
        ):
            if type(count) is int and count.bit_length() > 63:
                raise InvalidInputError(
                    f"{option}={shown(count)} is out of range; pass a whole number >= 1 "
                    "(below 2**63) or None"
                )
        if config is not None and not isinstance(config, Mapping):
            raise InvalidInputError(
                f"config must be a mapping (or None), got {type(config).__name__}; "
                "pass e.g. config={'user_id': 'ada'}"
            )
        options = RunOptions(
            mode=mode,
            on_error=on_error,
            max_concurrency=max_concurrency,
            recursion_limit=recursion_limit,
            config=MappingProxyType(dict(config or {})),
            redactor=redactor,
        )
        check_durability(durability)
        if thread_id is not None:
            if self.checkpointer is None:
                raise InvalidInputError(
                    f"graph {self.name!r} has no checkpointer, so runs cannot have a "
                    "thread_id; compile it with compile(checkpointer=...)"
                )
            if mode == "dataflow":
                raise InvalidInputError(
                    "runs on a thread are checkpointed after every superstep, which needs "
                    "mode='supersteps'; drop mode='dataflow' or the thread_id"
                )
        return options

    def _plain_start(
        self, run_input: RunInput | Resume | Command
    ) -> tuple[dict[str, Any], Mapping[str, Any]]:
        if isinstance(run_input, Resume | Command):
            raise InvalidInputError(
                f"{type(run_input).__name__}(...) continues a thread: pass thread_id=... and "
                "compile the graph with a checkpointer"
            )
        values = self.schema.initial(run_input)
        if isinstance(run_input, BaseModel):
            given: Mapping[str, Any] = {
                k: getattr(run_input, k) for k in run_input.model_fields_set
            }
        else:
            given = dict(run_input or {})
        try:
            # Redaction, events and references walk the input: depth must stay bounded.
            check_text_and_nesting(given, path="input", text=False)
        except SerializationError as exc:
            raise InvalidInputError(f"run {str(exc).removeprefix('cannot store ')}") from None
        return values, given

    async def _start(
        self,
        run_input: RunInput | Resume | Command,
        options: RunOptions,
        *,
        thread_id: str | None,
        checkpoint_id: str | None,
        durability: Durability,
    ) -> tuple[dict[str, Any], Mapping[str, Any], ThreadRun | None]:
        if thread_id is None:
            if checkpoint_id is not None:
                raise InvalidInputError("checkpoint_id needs a thread_id")
            values, given = self._plain_start(run_input)
            return values, given, None
        return await open_thread(
            self,
            run_input,
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
            durability=durability,
        )

    async def run(
        self,
        run_input: RunInput | Resume | Command = None,
        *,
        config: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        mode: SchedulingMode = "supersteps",
        on_error: ErrorPolicy = "fail_fast",
        max_concurrency: int | None = None,
        recursion_limit: int | None = None,
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        durability: Durability = "sync",
        redactor: Redactor | None = None,
    ) -> RunResult:
        """Run to the end (or to a pause) and return the :class:`RunResult`.

        Node failures do not raise: the result has ``status="failed"`` and
        lists the errors (call ``raise_for_status()`` to raise). Bad input
        raises :class:`~flowcore.errors.InvalidInputError` before anything runs.

        With ``thread_id`` (the graph needs a checkpointer) the run is saved
        after every superstep: ``run(None, thread_id=t)`` resumes it,
        ``run(Resume(value), thread_id=t)`` answers an ``interrupt()`` (so does
        ``run(Command(resume=value, update=...), thread_id=t)``, which writes
        ``update`` first), and
        ``checkpoint_id=`` forks from an older checkpoint. ``durability`` is
        ``"sync"``, ``"async"`` or ``"exit"``. ``redactor`` (e.g. a
        :class:`~flowcore.secrets.SecretRedactor`) keeps the secrets it knows
        out of the run's events, state, checkpoints and errors.

        Example:
            >>> # result = await compiled.run({"question": "hi"}, thread_id="t1")
        """
        options = self._options(
            config=config,
            mode=mode,
            on_error=on_error,
            max_concurrency=max_concurrency,
            recursion_limit=recursion_limit,
            thread_id=thread_id,
            durability=durability,
            redactor=redactor,
        )
        async with self._hold(thread_id):
            values, given, thread = await self._start(
                run_input,
                options,
                thread_id=thread_id,
                checkpoint_id=checkpoint_id,
                durability=durability,
            )
            engine = RunEngine(self, options, run_id=run_id, thread=thread)
            return await engine.execute(values, given)

    def _hold(self, thread_id: str | None) -> contextlib.AbstractAsyncContextManager[Any]:
        """The thread's lease for one run: taken before the thread is read, held to the end."""
        if thread_id is None:
            return contextlib.nullcontext()
        check_thread_id(thread_id)
        return hold_thread(self.checkpointer, thread_id)

    def run_sync(
        self,
        run_input: RunInput | Resume | Command = None,
        *,
        config: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        mode: SchedulingMode = "supersteps",
        on_error: ErrorPolicy = "fail_fast",
        max_concurrency: int | None = None,
        recursion_limit: int | None = None,
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        durability: Durability = "sync",
        redactor: Redactor | None = None,
    ) -> RunResult:
        """Blocking :meth:`run` for scripts; not for use inside a running event loop.

        Example:
            >>> # result = compiled.run_sync({"question": "hi"})
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "run_sync() cannot be called from inside a running event loop "
                "(e.g. in async code or a notebook); use 'await graph.run(...)' there"
            )
        return asyncio.run(
            self.run(
                run_input,
                config=config,
                run_id=run_id,
                mode=mode,
                on_error=on_error,
                max_concurrency=max_concurrency,
                recursion_limit=recursion_limit,
                thread_id=thread_id,
                checkpoint_id=checkpoint_id,
                durability=durability,
                redactor=redactor,
            )
        )

    def stream(
        self,
        run_input: RunInput | Resume | Command = None,
        *,
        config: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        mode: SchedulingMode = "supersteps",
        on_error: ErrorPolicy = "fail_fast",
        max_concurrency: int | None = None,
        recursion_limit: int | None = None,
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        durability: Durability = "sync",
        redactor: Redactor | None = None,
    ) -> RunStream:
        """Start a run and iterate its events as they happen.

        Use it as ``async with graph.stream(x) as events: async for ev in events``
        so that leaving the block early cancels the run cleanly. Without the
        ``async with``, a run that is not read to the end keeps running.
        Thread arguments and ``redactor`` are as for :meth:`run`; a thread
        that cannot be resumed as asked raises when the stream starts.

        Example:
            >>> # async with compiled.stream({"q": "hi"}) as events:
            >>> #     async for event in events:
            >>> #         print(event.type)
        """
        options = self._options(
            config=config,
            mode=mode,
            on_error=on_error,
            max_concurrency=max_concurrency,
            recursion_limit=recursion_limit,
            thread_id=thread_id,
            durability=durability,
            redactor=redactor,
        )
        if thread_id is None:
            values, given = self._plain_start(run_input)
            if checkpoint_id is not None:
                raise InvalidInputError("checkpoint_id needs a thread_id")
            return RunStream(self, options, values, given, run_id)
        opener = functools.partial(
            open_thread,
            self,
            run_input,
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
            durability=durability,
        )
        return RunStream(
            self, options, None, {}, run_id, opener=opener, hold=lambda: self._hold(thread_id)
        )

    # ------------------------------------------------------------- threads
    async def get_state(self, thread_id: str, checkpoint_id: str | None = None) -> StateSnapshot:
        """A thread's state at its latest checkpoint (or at ``checkpoint_id``).

        Example:
            >>> # snap = await compiled.get_state("t1"); snap.next, snap.interrupts
        """
        return await get_state(self, thread_id, checkpoint_id)

    async def get_state_history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> list[StateSnapshot]:
        """A thread's checkpoints as snapshots, newest first, across every branch.

        Example:
            >>> # for snap in await compiled.get_state_history("t1", limit=5): ...
        """
        return await state_history(self, thread_id, limit=limit, before=before)

    async def update_state(
        self,
        thread_id: str,
        values: Mapping[str, Any],
        *,
        as_node: str | None = None,
        checkpoint_id: str | None = None,
    ) -> str:
        """Apply ``values`` to a thread through the reducers, as a new checkpoint.

        With ``as_node`` the update counts as that node's output and the
        thread continues from the nodes after it. Returns the new checkpoint id.
        The update holds the thread's lease while it writes, so it raises
        :class:`~flowcore.errors.ThreadBusyError` while a run of the thread
        is in progress anywhere instead of writing under that run.

        Example:
            >>> # await compiled.update_state("t1", {"approved": True})
        """
        async with self._hold(thread_id):
            return await update_state(
                self, thread_id, values, as_node=as_node, checkpoint_id=checkpoint_id
            )


class RunStream(EventStream):
    """The events of one run, as an async iterator, plus its final result.

    The run starts on the first ``__anext__`` (or ``__aenter__``). ``cancel()``
    or leaving ``async with`` early cancels in-flight nodes; the stream still
    ends with a ``done`` event whose status is ``cancelled``.

    Example:
        >>> # async with compiled.stream(inp) as events:
        >>> #     async for ev in events: ...
        >>> #     result = await events.result()
    """

    def __init__(
        self,
        graph: CompiledGraph,
        options: RunOptions,
        values: dict[str, Any] | None,
        given: Mapping[str, Any],
        run_id: str | None,
        *,
        opener: Callable[[], Awaitable[tuple[dict[str, Any], Mapping[str, Any], ThreadRun]]]
        | None = None,
        hold: Callable[[], contextlib.AbstractAsyncContextManager[ThreadLease | None]]
        | None = None,
    ) -> None:
        super().__init__()
        self._graph = graph
        self._options = options
        self._opener = opener
        self._hold = hold
        self._engine = RunEngine(graph, options, run_id=run_id, emit=self._emit)
        self._values = values
        self._given = given

    @property
    def run_id(self) -> str:
        """The id of this run (known before it starts)."""
        return self._engine.run_id

    async def _run(self) -> RunResult:
        if self._hold is None:
            return await self._run_held()
        async with self._hold():
            return await self._run_held()

    async def _run_held(self) -> RunResult:
        values, given = self._values, self._given
        if self._opener is not None:
            values, given, thread = await self._opener()
            self._engine.attach_thread(thread)
        assert values is not None
        if self._cancel_requested:
            return await self._engine.execute_cancelled(values, given)
        return await self._engine.execute(values, given)

    def _left_result(self) -> RunResult | None:
        return self._engine.result
