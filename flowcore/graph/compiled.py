"""``CompiledGraph``: the immutable, validated graph that runs.

One compiled graph can run many times, also concurrently: every run keeps
its own state in its own :class:`~flowcore.scheduler.engine.RunEngine`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from types import MappingProxyType, TracebackType
from typing import Any

from pydantic import BaseModel

from flowcore.events import DoneEvent, Event
from flowcore.graph.spec import EdgeSpec, NodeSpec, RouterSpec
from flowcore.graph.topology import Topology
from flowcore.result import RunResult
from flowcore.scheduler.engine import RunEngine
from flowcore.scheduler.options import ErrorPolicy, RunOptions, SchedulingMode
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
        "edges",
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
    ) -> None:
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

    # ------------------------------------------------------------------ runs
    def _prepare(
        self,
        run_input: RunInput,
        *,
        config: Mapping[str, Any] | None,
        run_id: str | None,
        mode: SchedulingMode,
        on_error: ErrorPolicy,
        max_concurrency: int | None,
        recursion_limit: int | None,
    ) -> tuple[RunOptions, dict[str, Any], Mapping[str, Any]]:
        options = RunOptions(
            mode=mode,
            on_error=on_error,
            max_concurrency=max_concurrency,
            recursion_limit=recursion_limit,
            config=MappingProxyType(dict(config or {})),
        )
        values = self.schema.initial(run_input)
        if isinstance(run_input, BaseModel):
            given: Mapping[str, Any] = {
                k: getattr(run_input, k) for k in run_input.model_fields_set
            }
        else:
            given = dict(run_input or {})
        return options, values, given

    async def run(
        self,
        run_input: RunInput = None,
        *,
        config: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        mode: SchedulingMode = "supersteps",
        on_error: ErrorPolicy = "fail_fast",
        max_concurrency: int | None = None,
        recursion_limit: int | None = None,
    ) -> RunResult:
        """Run to the end and return the :class:`RunResult`.

        Node failures do not raise: the result has ``status="failed"`` and
        lists the errors (call ``raise_for_status()`` to raise). Bad input
        raises :class:`~flowcore.errors.InvalidInputError` before anything runs.

        Example:
            >>> # result = await compiled.run({"question": "hi"}, mode="dataflow")
        """
        options, values, given = self._prepare(
            run_input,
            config=config,
            run_id=run_id,
            mode=mode,
            on_error=on_error,
            max_concurrency=max_concurrency,
            recursion_limit=recursion_limit,
        )
        engine = RunEngine(self, options, run_id=run_id)
        return await engine.execute(values, given)

    def run_sync(
        self,
        run_input: RunInput = None,
        *,
        config: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        mode: SchedulingMode = "supersteps",
        on_error: ErrorPolicy = "fail_fast",
        max_concurrency: int | None = None,
        recursion_limit: int | None = None,
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
            )
        )

    def stream(
        self,
        run_input: RunInput = None,
        *,
        config: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        mode: SchedulingMode = "supersteps",
        on_error: ErrorPolicy = "fail_fast",
        max_concurrency: int | None = None,
        recursion_limit: int | None = None,
    ) -> RunStream:
        """Start a run and iterate its events as they happen.

        Use it as ``async with graph.stream(x) as events: async for ev in events``
        so that leaving the block early cancels the run cleanly. Without the
        ``async with``, a run that is not read to the end keeps running.

        Example:
            >>> # async with compiled.stream({"q": "hi"}) as events:
            >>> #     async for event in events:
            >>> #         print(event.type)
        """
        options, values, given = self._prepare(
            run_input,
            config=config,
            run_id=run_id,
            mode=mode,
            on_error=on_error,
            max_concurrency=max_concurrency,
            recursion_limit=recursion_limit,
        )
        return RunStream(self, options, values, given, run_id)


_END_OF_STREAM: Any = object()


class RunStream:
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
        values: dict[str, Any],
        given: Mapping[str, Any],
        run_id: str | None,
    ) -> None:
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._engine = RunEngine(graph, options, run_id=run_id, emit=self._queue.put_nowait)
        self._values = values
        self._given = given
        self._task: asyncio.Task[RunResult] | None = None
        self._finished = False
        self._cancel_requested = False

    @property
    def run_id(self) -> str:
        """The id of this run (known before it starts)."""
        return self._engine.run_id

    def _start(self) -> asyncio.Task[RunResult]:
        if self._task is None:
            if self._cancel_requested:
                run = self._engine.execute_cancelled(self._values, self._given)
            else:
                run = self._engine.execute(self._values, self._given)
            task = asyncio.create_task(run)
            task.add_done_callback(lambda _t: self._queue.put_nowait(_END_OF_STREAM))
            self._task = task
        return self._task

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        if self._finished:
            raise StopAsyncIteration
        self._start()
        event = await self._queue.get()
        if event is _END_OF_STREAM:
            self._finished = True
            raise StopAsyncIteration
        if isinstance(event, DoneEvent):
            # Let the done callback's sentinel arrive, but stop at done.
            self._finished = True
        return event

    async def result(self) -> RunResult:
        """Wait for the run to end (reading no more events) and return its result.

        Example:
            >>> # result = await stream.result()
        """
        task = self._start()
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled() and self._engine.result is not None:
                return self._engine.result
            raise

    def cancel(self) -> None:
        """Ask the run to stop; in-flight nodes are cancelled, ``done`` still arrives.

        Example:
            >>> # stream.cancel()
        """
        if self._task is None:
            # Not started yet: remember, so that starting ends it at once.
            self._cancel_requested = True
        elif not self._task.done():
            self._task.cancel()

    async def aclose(self) -> None:
        """Cancel the run if it is still going and wait until it has stopped."""
        task = self._task
        if task is None:
            self._finished = True
            return
        if not task.done():
            task.cancel()
        # wait() rather than await: a cancelled run is expected here, but the
        # caller's own cancellation must still propagate.
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # mark as retrieved; the result/errors live in result()
        self._finished = True

    async def __aenter__(self) -> RunStream:
        self._start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
