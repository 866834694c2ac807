"""Running a compat graph: ``invoke``, ``stream``, ``run_stream``, events, subgraph calls.

:class:`~flowcore.compat.langgraph._pregel.CompiledStateGraph` takes these methods
from :class:`Running`, written against it (``self: CompiledStateGraph``). mypy
refuses a self type narrower than the class that declares it, hence the
``type: ignore[misc]`` on each ``def``; it still checks every body and
every call against ``CompiledStateGraph``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph._caller_stream import caller_sink
from flowcore.compat.langgraph._channels import (
    MISSING,
)
from flowcore.compat.langgraph._context import TaskScope, running_scope
from flowcore.compat.langgraph._errors import GraphInterrupt
from flowcore.compat.langgraph._events import CompatRunStream
from flowcore.compat.langgraph._events_v2 import (
    astream_events_v1,
    astream_events_v2,
    astream_log,
    merge_bound_config,
)
from flowcore.compat.langgraph._loop import (
    INTERRUPT,
    Run,
)
from flowcore.compat.langgraph._messages_stream import (
    messages_stream_handler,
    wants_protocol_events,
    without_protocol_handlers,
)
from flowcore.compat.langgraph._pregel_helpers import (
    _OWN_RUN_OPTIONS,
    _ChunkFormatter,
    _on_loop,
    _sync_call,
    _sync_iter,
)
from flowcore.compat.langgraph._records import (
    Sink,
)
from flowcore.compat.langgraph._run_config import run_config, seeded_runtime
from flowcore.compat.langgraph._runtime import RunControl, coerce_context
from flowcore.compat.langgraph._stream_v3 import (
    ainvoke_v2,
    astream_events_v3,
    part_of_chunk,
    stream_events_v3,
)
from flowcore.compat.langgraph._subgraph_travel import (
    CHECKPOINT_MAP,
    address_root,
    child_map,
)
from flowcore.compat.langgraph._tool_stream import tools_stream_handler, with_handler
from flowcore.compat.langgraph._types import (
    Interrupt,
)
from flowcore.compat.langgraph._warnings import durability_of, without_checkpoint_during
from flowcore.secrets import Redactor

if TYPE_CHECKING:
    from flowcore.compat.langgraph._pregel import CompiledStateGraph


__all__ = ["Running"]


class Running:
    """The methods of :class:`CompiledStateGraph` for running a compat graph."""

    # ------------------------------------------------------------------ running
    def _run(  # type: ignore[misc]
        self: CompiledStateGraph,
        run_input: Any,
        config: Mapping[str, Any] | None,
        sink: Sink,
        *,
        durability: str | None,
        interrupt_before: Sequence[str] | str | None,
        interrupt_after: Sequence[str] | str | None,
        context: Any = None,
        control: RunControl | None = None,
    ) -> Run:
        config = run_config(config, has_saver=self.checkpointer is not None)
        if (config.get("configurable") or {}).get("checkpoint_ns"):
            # A subgraph's config: the root replays from where the map says it stood.
            config["configurable"] = address_root(config["configurable"])
        before = self.interrupt_before_nodes if interrupt_before is None else interrupt_before
        after = self.interrupt_after_nodes if interrupt_after is None else interrupt_after
        if before == "*":
            before = list(self.nodes)
        if after == "*":
            after = list(self.nodes)
        run = Run(
            self,
            run_input,
            config,
            sink=sink,
            durability=durability or "async",
            interrupt_before=list(before),
            interrupt_after=list(after),
        )
        slot = seeded_runtime(config)
        if slot is not None:
            # Its store stands for the graph's; its context is the run's if the call has none.
            run.store = getattr(slot, "store", None)
            if context is None:
                context = getattr(slot, "context", None)
        run.context = coerce_context(self._context_schema(), context)
        run.control = control
        return run

    async def astream(  # type: ignore[misc]
        self: CompiledStateGraph,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        durability: str | None = None,
        debug: bool | None = None,
        output_keys: Sequence[str] | None = None,
        context: Any = None,
        control: RunControl | None = None,
        version: str = "v1",
        _caller: Any = MISSING,
        **_: Any,
    ) -> AsyncIterator[Any]:
        """Run and yield stream chunks as they happen (``stream_mode`` as in LangGraph).

        ``version="v2"`` yields typed-dict stream parts (``type``, ``ns``, ``data``).

        Example:
            >>> # async for chunk in app.astream({"n": 1}, stream_mode="updates"): ...
        """
        durability = durability_of(durability, _.get("checkpoint_during"))
        modes = (
            [self.stream_mode]
            if stream_mode is None
            else ([stream_mode] if isinstance(stream_mode, str) else list(stream_mode))
        )
        single = isinstance(stream_mode, str) or stream_mode is None
        out: asyncio.Queue[Any] = asyncio.Queue()
        done = object()
        formatter = _ChunkFormatter(modes, single=single and version != "v2", subgraphs=subgraphs)

        # Found where the stream was started (stream() iterates on a thread of its own).
        also = caller_sink(config) if _caller is MISSING else _caller

        def sink(ns: tuple[str, ...], kind: str, payload: Any) -> None:
            for item in formatter.format(ns, kind, payload):
                out.put_nowait(item)
            if also is not None:
                also(ns, kind, payload)

        if "tools" in modes:
            config = with_handler(
                config, tools_stream_handler(_on_loop(sink, "tools"), subgraphs=subgraphs)
            )
        if "messages" in modes:
            protocol = wants_protocol_events(config, version)
            if not protocol:
                config = without_protocol_handlers(config)
            chunks = _on_loop(sink, "messages_chunk")
            handler = messages_stream_handler(
                chunks,
                formatter.seen_messages,
                subgraphs=subgraphs,
                protocol=protocol,
            )
            config = with_handler(config, handler)

        run = self._run(
            input,
            config,
            sink,
            durability=durability,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            context=context,
            control=control,
        )
        run.wants = formatter.kinds()
        if output_keys is not None:
            run.output_keys = list(output_keys)

        async def drive() -> None:
            try:
                await run.execute()
            except GraphInterrupt as exc:
                if not exc.interrupts:
                    # A breakpoint, here or in a subgraph: the pause is shown once, here.
                    sink((), "updates", {INTERRUPT: ()})
            finally:
                out.put_nowait(done)

        worker = asyncio.ensure_future(drive())
        try:
            while True:
                item = await out.get()
                if item is done:
                    break
                yield item if version != "v2" else part_of_chunk(item, subgraphs, self)
            await worker
        finally:
            if not worker.done():
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await worker

    def astream_events(  # type: ignore[misc]
        self: CompiledStateGraph,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        version: str = "v2",
        **kwargs: Any,
    ) -> Any:
        """LangChain's run events of a run (``version`` "v2" or "v1"; see ``_events_v2``);
        ``version="v3"``: an awaitable of an ``AsyncGraphRunStream`` (see ``_stream_v3``).

        Example:
            >>> # async for event in app.astream_events({"n": 1}, version="v2"): ...
        """
        if version == "v3":
            return astream_events_v3(self, input, config, **kwargs)
        if version == "v1":
            return astream_events_v1(self, input, config, **kwargs)
        return astream_events_v2(self, input, config, **kwargs)

    def astream_log(  # type: ignore[misc]
        self: CompiledStateGraph,
        input: Any,
        config: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """LangChain's run-log patches of a run (needs ``langchain_core``; see ``_events_v2``).

        Example:
            >>> # async for patch in app.astream_log({"n": 1}): print(patch.ops)
        """
        return astream_log(self, input, config, **kwargs)

    def run_stream(  # type: ignore[misc]
        self: CompiledStateGraph,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        thread_id: str | None = None,
        recursion_limit: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        redactor: Redactor | None = None,
        durability: str | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
    ) -> CompatRunStream:
        """Run and iterate flowcore's own events (:mod:`flowcore.events`), as a native run does.

        The counterpart of native ``CompiledGraph.stream``: ``run_start``, per task
        ``node_start`` then ``node_end`` / ``node_error`` / ``interrupt`` /
        ``node_cancelled``, ``usage`` for each chat-model call a node makes (when
        it ends, from the run's usage meter), ``tool_call_start`` /
        ``tool_call_result`` for ``ToolNode`` calls, ``custom`` for stream-writer
        chunks, ``checkpoint`` for each checkpoint made on a thread, and exactly
        one ``done``; then
        ``await events.result()`` gives the :class:`~flowcore.result.RunResult`.
        ``input`` is what :meth:`ainvoke` takes, or flowcore's ``Resume``
        (as ``Command(resume=...)``). ``thread_id``, ``recursion_limit`` and
        ``metadata`` are merged into ``config``. ``redactor`` keeps the secrets
        it knows out of the events and the result (not out of the checkpoints:
        those are the saver's, as in LangGraph). A failed run does not raise:
        it ends ``failed``. LangGraph's stream modes (:meth:`astream`) are not
        affected and cost nothing extra when nobody streams these events.

        Example:
            >>> # async with app.run_stream({"n": 1}, thread_id="t1") as events:
            >>> #     async for event in events: print(event.type)
            >>> #     result = await events.result()
        """
        merged: dict[str, Any] = dict(config or {})
        if thread_id is not None:
            merged["configurable"] = {
                **dict(merged.get("configurable") or {}),
                "thread_id": thread_id,
            }
        if recursion_limit is not None:
            merged["recursion_limit"] = recursion_limit
        if metadata:
            merged["metadata"] = {**dict(merged.get("metadata") or {}), **dict(metadata)}
        return CompatRunStream(
            self,
            input,
            merged,
            run_id=run_id,
            redactor=redactor,
            run_options={
                "durability": durability,
                "interrupt_before": interrupt_before,
                "interrupt_after": interrupt_after,
            },
        )

    def stream_events(  # type: ignore[misc]
        self: CompiledStateGraph,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        version: str = "v2",
        **kw: Any,
    ) -> Any:
        """``version="v3"``: a :class:`~flowcore.compat.langgraph._stream_v3_run.GraphRunStream`.

        Example:
            >>> # run = app.stream_events({"n": 1}, version="v3"); run.output
        """
        if version != "v3":
            raise NotImplementedError(f"stream_events(version={version!r}) is not available")
        return stream_events_v3(self, input, config, **kw)

    def stream(  # type: ignore[misc]
        self: CompiledStateGraph,
        input: Any,
        config: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """The sync form of :meth:`astream`.

        Example:
            >>> # for chunk in app.stream({"n": 1}, stream_mode="values"): print(chunk)
        """
        also = caller_sink(config)
        kwargs = without_checkpoint_during(kwargs)
        return _sync_iter(lambda: self.astream(input, config, _caller=also, **kwargs))

    async def ainvoke(  # type: ignore[misc]
        self: CompiledStateGraph,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: str = "values",
        **kwargs: Any,
    ) -> Any:
        """Run to the end (or a pause) and return the output state.

        A paused run's output carries ``__interrupt__``: the pending questions.

        Called inside a running node of another graph (on that graph's thread),
        the run is a child of that node, as a subgraph node's is: it saves under
        the node's namespace and a pause in it pauses the node.

        Example:
            >>> # result = await app.ainvoke({"messages": [("user", "hi")]})
        """
        kwargs = without_checkpoint_during(kwargs)
        if kwargs.pop("version", "v1") == "v2":
            return await ainvoke_v2(self, input, config, stream_mode, kwargs)
        calling = self._calling_task(config, stream_mode, kwargs)
        if calling is not None:
            return await self._arun_subgraph(input, *calling, control=kwargs.get("control"))
        if stream_mode != "values":
            return [c async for c in self.astream(input, config, stream_mode=stream_mode, **kwargs)]
        latest: Any = None
        interrupts: list[Interrupt] = []

        # No queue and no chunk formatting: invoke only needs the last values and the pauses.
        def sink(ns: tuple[str, ...], kind: str, payload: Any) -> None:
            nonlocal latest
            if ns:
                return
            if kind == "values":
                latest = payload
            elif kind == "updates" and isinstance(payload, dict) and payload.get(INTERRUPT):
                interrupts.extend(payload[INTERRUPT])

        run = self._run(
            input,
            config,
            sink,
            durability=kwargs.get("durability"),
            interrupt_before=kwargs.get("interrupt_before"),
            interrupt_after=kwargs.get("interrupt_after"),
            context=kwargs.get("context"),
            control=kwargs.get("control"),
        )
        run.output_keys = list(kwargs.get("output_keys") or self.output_keys)
        # Pauses are always reported (as "updates" records); node updates are not needed here.
        run.wants = {"values"}
        with contextlib.suppress(GraphInterrupt):
            await run.execute()
        if interrupts:
            return (
                {**latest, INTERRUPT: interrupts}
                if isinstance(latest, dict)
                else {INTERRUPT: interrupts}
            )
        return latest

    def invoke(  # type: ignore[misc]
        self: CompiledStateGraph, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        """The sync form of :meth:`ainvoke`.

        Example:
            >>> # result = app.invoke({"n": 1}, {"recursion_limit": 50})
        """
        kwargs = without_checkpoint_during(kwargs)
        calling = self._calling_task(config, kwargs.get("stream_mode", "values"), kwargs)
        if calling is not None:
            scope, parent = calling
            if parent.loop is not None and threading.get_ident() != parent.loop_thread:
                # A sync node runs in a worker thread while its run's loop waits for it:
                # the child run goes on that loop, beside its parent's saver and batches.
                child = self._arun_subgraph(input, scope, parent, control=kwargs.get("control"))
                return asyncio.run_coroutine_threadsafe(child, parent.loop).result()
        return _sync_call(lambda: self.ainvoke(input, config, **kwargs))

    def _calling_task(  # type: ignore[misc]
        self: CompiledStateGraph,
        config: Mapping[str, Any] | None,
        stream_mode: Any,
        kwargs: Mapping[str, Any],
    ) -> tuple[TaskScope, Run] | None:
        """The running node (and its run) this call is made from, when it is a child run of it.

        A call with its own thread, its own stream mode or run options is a run of
        its own, as is any call made outside a node. So is a call whose config
        names a checkpoint of its own (a thread, even the caller's, a namespace or
        a checkpoint) without being the node's own config passed on: like
        LangGraph, it addresses its own history at the thread's root.
        """
        scope = running_scope()
        host = None if scope is None else scope.host
        if scope is None or stream_mode != "values" or not isinstance(host, Run):
            return None
        if any(kwargs.get(k) is not None for k in _OWN_RUN_OPTIONS):
            return None
        given = (config or {}).get("configurable") or {}
        thread = given.get("thread_id")
        if thread is not None and thread != host.thread_id:
            return None
        if _names_own_checkpoint(config):
            return None
        return scope, host

    def _history_ns(self: CompiledStateGraph, ns: str) -> str:  # type: ignore[misc]
        """Where this graph keeps its checkpoints when it runs under namespace ``ns``.

        A ``checkpointer=True`` subgraph keeps one history per thread, so each entry
        of its node goes on from where the last one left it: its namespace drops the
        task ids. Any other subgraph's history is that one task's.
        """
        if not self.own_history:
            return ns
        return "|".join(part.split(":")[0] for part in ns.split("|"))

    async def _arun_subgraph(  # type: ignore[misc]
        self: CompiledStateGraph,
        value: Any,
        scope: TaskScope,
        parent: Run,
        *,
        control: RunControl | None = None,
    ) -> Any:
        """Run this graph as a child of ``parent``'s task ``scope`` (``control``: the call's)."""
        ns = f"{parent.ns}|{scope.node}:{scope.task_id}".lstrip("|")
        if scope.graphs_run:
            # A task's later graphs each keep a history of their own.
            ns = f"{ns}|{scope.graphs_run}"
        scope.graphs_run += 1
        ns = self._history_ns(ns)
        config = {
            **parent.config,
            "configurable": {**parent.configurable, "checkpoint_ns": ns},
        }
        config["configurable"].pop("checkpoint_id", None)
        config["configurable"][CHECKPOINT_MAP] = found = child_map(
            parent.configurable, parent.ns, parent.checkpoint.get("id")
        )
        if ns in found and ns not in parent.entered:
            # Addressed by a subgraph snapshot's config: replay from that very checkpoint.
            config["configurable"]["checkpoint_id"] = found[ns]
            parent.entered.add(ns)
        run = Run(
            self,
            value,
            config,
            sink=parent.sink,
            durability=parent.durability,
            interrupt_before=self.interrupt_before_nodes,
            interrupt_after=self.interrupt_after_nodes,
            parent_scope=scope,
            checkpoint_ns=ns,
        )
        if self.checkpointer is None and parent.saver is not None:
            run.saver = parent.saver
            run.thread_id = parent.thread_id
        run.force_resume = parent.resuming or bool(scope.resume)
        run.resume_by_id = parent.resume_by_id
        run.context, run.control = parent.context, control or parent.control
        # As in LangGraph, a subgraph's nodes see the store of the run that calls it.
        run.store = parent.store
        run.replay_of, run.entered = parent.replay_of, parent.entered
        addressed = "checkpoint_id" in config["configurable"]
        if (
            self.own_history
            and parent.replay_of is not None
            and ns not in parent.entered
            and not addressed
        ):
            # Its one history runs on past the replayed checkpoint: the replay's first
            # entry goes on from where it stood then (or from nothing, if it had not run).
            parent.entered.add(ns)
            run.as_of = parent.replay_of
            # It takes its input anew (its state then is the base), not a resume.
            run.force_resume = False
        run.wants = parent.wants
        await run.execute()
        return run.graph.read_output(run.channels)

    def with_config(  # type: ignore[misc]
        self: CompiledStateGraph, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> _Configured:
        """This graph with ``config`` merged into every call.

        Example:
            >>> # app.with_config(recursion_limit=50).invoke(state)
        """
        return _Configured(self, {**dict(config or {}), **kwargs})


class _Configured:
    """A compiled graph with a default config (what ``with_config`` returns)."""

    def __init__(self, graph: CompiledStateGraph, config: dict[str, Any]) -> None:
        self.graph = graph
        self.config = config

    def _merge(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        merged = {**self.config, **dict(config or {})}
        merged["configurable"] = {
            **dict(self.config.get("configurable") or {}),
            **dict((config or {}).get("configurable") or {}),
        }
        return merged

    def invoke(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return self.graph.invoke(input, self._merge(config), **kw)

    async def ainvoke(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return await self.graph.ainvoke(input, self._merge(config), **kw)

    def stream(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return self.graph.stream(input, self._merge(config), **kw)

    def astream(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return self.graph.astream(input, self._merge(config), **kw)

    def astream_events(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        merged = merge_bound_config(self.config, config)
        merged["configurable"] = self._merge(config)["configurable"]
        return self.graph.astream_events(input, merged, **kw)

    def stream_events(self, input: Any, config: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return self.graph.stream_events(input, self._merge(config), **kw)

    def get_graph(
        self, config: Mapping[str, Any] | None = None, *, xray: bool | int = False
    ) -> Any:
        """The drawing of the configured graph (see ``CompiledStateGraph.get_graph``)."""
        return self.graph.get_graph(self._merge(config), xray=xray)

    async def aget_graph(
        self, config: Mapping[str, Any] | None = None, *, xray: bool | int = False
    ) -> Any:
        """The async form of :meth:`get_graph`."""
        return self.graph.get_graph(self._merge(config), xray=xray)


_CHECKPOINT_KEYS = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")


def _names_own_checkpoint(config: Mapping[str, Any] | None) -> bool:
    """Whether ``config``, given to a graph called in a node, addresses a history of its own.

    It names a thread or a checkpoint, and is not a node's config handed on (a
    node's config carries its task's namespace in its metadata).
    """
    if not config:
        return False
    given = config.get("configurable") or {}
    if not any(given.get(key) for key in _CHECKPOINT_KEYS):
        return False
    return "langgraph_checkpoint_ns" not in (config.get("metadata") or {})
