"""Reading a compat graph's state and history: ``get_state``, ``get_state_history``, subgraphs.

:class:`~flowcore.compat.langgraph._pregel.CompiledStateGraph` takes these methods
from :class:`StateReading`, written against it (``self: CompiledStateGraph``). mypy
refuses a self type narrower than the class that declares it, hence the
``type: ignore[misc]`` on each ``def``; it still checks every body and
every call against ``CompiledStateGraph``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph._error_handlers import ERROR_SOURCE
from flowcore.compat.langgraph._lent_saver import lent_saver, resolve_saver
from flowcore.compat.langgraph._loop import ERROR, INTERRUPT, NO_WRITES, RESUME, Run
from flowcore.compat.langgraph._loop_helpers import NULL_TASK_ID
from flowcore.compat.langgraph._planner import shown_path
from flowcore.compat.langgraph._pregel_helpers import (
    _nobody,
    _sync_call,
    _sync_iter,
)
from flowcore.compat.langgraph._subgraph_detect import (
    find_subgraph,
    iter_subgraphs,
    subgraph_task_state,
)
from flowcore.compat.langgraph._subgraph_travel import (
    subgraph_at,
    with_checkpoint_map,
)
from flowcore.compat.langgraph._task_result import task_result
from flowcore.compat.langgraph._types import (
    ROOT,
    Interrupt,
    PregelTask,
    StateSnapshot,
)

if TYPE_CHECKING:
    from flowcore.compat.langgraph._pregel import CompiledStateGraph


__all__ = ["StateReading"]


class StateReading:
    """The methods of :class:`CompiledStateGraph` for reading a compat graph's state and history."""

    # ------------------------------------------------------------ inspection
    def get_subgraphs(  # type: ignore[misc]
        self: CompiledStateGraph, *, namespace: str | None = None, recurse: bool = False
    ) -> Iterator[tuple[str, Any]]:
        """``(namespace, subgraph)`` for each node that runs a graph (see ``_subgraph_detect``).

        Example:
            >>> # dict(app.get_subgraphs(recurse=True))
        """
        return iter_subgraphs(self, namespace, recurse)

    async def aget_subgraphs(  # type: ignore[misc]
        self: CompiledStateGraph, *, namespace: str | None = None, recurse: bool = False
    ) -> AsyncIterator[tuple[str, Any]]:
        """The async form of :meth:`get_subgraphs`."""
        for item in iter_subgraphs(self, namespace, recurse):
            yield item

    def _saver(  # type: ignore[misc]
        self: CompiledStateGraph, config: Mapping[str, Any] | None = None
    ) -> Any:
        """The saver state methods read and write under ``config`` (see ``_lent_saver``)."""
        saver = resolve_saver(
            self.checkpointer,
            # The low-level Pregel shares these methods and has neither flag.
            own_history=getattr(self, "own_history", False),
            opted_out=getattr(self, "opted_out", False),
            config=config,
        )
        if saver is None:
            raise ValueError("No checkpointer set")
        return saver

    async def aget_state(  # type: ignore[misc]
        self: CompiledStateGraph, config: Mapping[str, Any], *, subgraphs: bool = False
    ) -> StateSnapshot:
        """The thread's state at its latest checkpoint (or the one ``checkpoint_id`` names).

        Example:
            >>> # snapshot = await app.aget_state({"configurable": {"thread_id": "t1"}})
        """
        saver = self._saver(config)
        # A config lending a saver addresses this very graph, whatever its namespace.
        ns = (config.get("configurable") or {}).get("checkpoint_ns") or ""
        sub = None if lent_saver(config) is not None else subgraph_at(self, ns)
        if sub is not None:
            snapshot: StateSnapshot = await sub._state_with(
                sub.checkpointer or saver, config, subgraphs=subgraphs
            )
            return snapshot
        return await self._state_with(saver, config, subgraphs=subgraphs)

    async def _state_with(  # type: ignore[misc]
        self: CompiledStateGraph, saver: Any, config: Mapping[str, Any], *, subgraphs: bool
    ) -> StateSnapshot:
        conf = dict(config.get("configurable") or {})
        conf["checkpoint_ns"] = self._history_ns(conf.get("checkpoint_ns") or "")
        saved = await saver.aget_tuple({"configurable": conf})
        snapshot = self._snapshot(config, saved, live="checkpoint_id" not in conf)
        if saved is None:
            return snapshot
        return await self._with_task_states(snapshot, saver, conf, subgraphs=subgraphs)

    def get_state(  # type: ignore[misc]
        self: CompiledStateGraph, config: Mapping[str, Any], *, subgraphs: bool = False
    ) -> StateSnapshot:
        """The sync form of :meth:`aget_state`."""
        return _sync_call(lambda: self.aget_state(config, subgraphs=subgraphs))

    async def _with_task_states(  # type: ignore[misc]
        self: CompiledStateGraph,
        snapshot: StateSnapshot,
        saver: Any,
        conf: Mapping[str, Any],
        *,
        subgraphs: bool,
    ) -> StateSnapshot:
        """``snapshot`` with each subgraph task's state: the config of the subgraph's
        history (``subgraphs``: the subgraph's own snapshot there)."""
        tasks = []
        for task in snapshot.tasks:
            spec = self.nodes.get(task.name)
            # A subgraph node, or a node whose code runs a graph (a child run of it); a
            # checkpointer=False subgraph keeps no history.
            child_config = (
                None
                if spec is None
                else subgraph_task_state(
                    spec.action,
                    conf.get("thread_id"),
                    conf.get("checkpoint_ns") or "",
                    task.name,
                    task.id,
                )
            )
            if spec is None or child_config is None:
                tasks.append(task)
                continue
            state: Any = child_config
            if subgraphs:
                child: Any = find_subgraph(spec.action)
                child_saver = child.checkpointer or saver
                state = await child._state_with(child_saver, child_config, subgraphs=True)
            tasks.append(task._replace(state=state))
        return snapshot._replace(tasks=tuple(tasks))

    def _snapshot(  # type: ignore[misc]
        self: CompiledStateGraph, config: Mapping[str, Any], saved: Any, *, live: bool
    ) -> StateSnapshot:
        if saved is None:
            return StateSnapshot({}, (), dict(config), None, None, None, (), ())
        run = Run(
            self,
            None,
            {**dict(config), "configurable": dict(saved.config["configurable"])},
            sink=_nobody,
            durability="sync",
            interrupt_before=(),
            interrupt_after=(),
            # Task ids depend on the namespace: the snapshot's are the run's.
            checkpoint_ns=saved.config["configurable"].get("checkpoint_ns") or "",
        )
        run.wants = set()
        run.channels = self.new_channels()
        run.checkpoint = dict(saved.checkpoint)
        run.checkpoint = {
            **run.checkpoint,
            "versions_seen": {k: dict(v) for k, v in saved.checkpoint["versions_seen"].items()},
            "channel_versions": dict(saved.checkpoint["channel_versions"]),
        }
        self.restore_channels(run.channels, run.checkpoint)
        run._recount()
        run.step = int((saved.metadata or {}).get("step", -1)) + 1
        pending = [(str(t), c, self.decode_write(c, v)) for t, c, v in saved.pending_writes or ()]
        null = [(c, v) for t, c, v in pending if t == NULL_TASK_ID]
        if null:
            run.apply_writes([], extra=null)
        tasks = run.prepare(for_execution=False)
        status: dict[str, dict[str, Any]] = {}
        for task_id, chan, value in pending:
            entry = status.setdefault(task_id, {"writes": [], "error": None, "interrupts": []})
            if chan == ERROR:
                entry["error"] = value
            elif chan == INTERRUPT:
                entry["interrupts"] = [i for i in value if isinstance(i, Interrupt)]
            elif chan not in (RESUME, ERROR_SOURCE):
                entry["writes"].append((chan, value))
        finished = []
        out_tasks: list[PregelTask] = []
        for task in tasks:
            entry = status.get(task.id, {"writes": [], "error": None, "interrupts": []})
            writes = [(c, v) for c, v in entry["writes"] if c != NO_WRITES]
            is_done = bool(entry["writes"])
            if is_done:
                task.writes = writes
                finished.append(task)
            result = None
            if is_done and self.root_output:
                # A root-state graph's task result is the value it wrote, not a dict.
                result = next((v for c, v in writes if c == ROOT), None)
            elif is_done:
                result = task_result(writes, self.stream_keys)
            error = entry["error"]
            out_tasks.append(
                PregelTask(
                    task.id,
                    task.name,
                    shown_path(task.path),
                    error,
                    () if (live and is_done) else tuple(entry["interrupts"]),
                    None,
                    result,
                )
            )
        if live and finished:
            run.apply_writes(finished)
        values = self.read_output(run.channels, self.stream_keys)
        next_names = tuple(t.name for t in tasks if not (live and t in finished))
        return StateSnapshot(
            values,
            next_names,
            with_checkpoint_map(saved.config, saved.metadata),
            saved.metadata,
            saved.checkpoint.get("ts"),
            with_checkpoint_map(saved.parent_config, saved.metadata),
            tuple(out_tasks),
            tuple(i for t in out_tasks for i in t.interrupts),
        )

    async def aget_state_history(  # type: ignore[misc]
        self: CompiledStateGraph,
        config: Mapping[str, Any],
        *,
        filter: dict[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        """Every checkpoint of the thread as a snapshot, newest first.

        Example:
            >>> # async for snap in app.aget_state_history(config): print(snap.next)
        """
        saver = self._saver(config)
        conf = {**dict(config.get("configurable") or {})}
        conf.setdefault("checkpoint_ns", "")
        sub = None if lent_saver(config) is not None else subgraph_at(self, conf["checkpoint_ns"])
        if sub is not None:
            # A subgraph's config: the subgraph's history, read on this graph's saver.
            async for snapshot in sub._history_with(
                sub.checkpointer or saver, config, conf, filter, before, limit
            ):
                yield snapshot
            return
        async for snapshot in self._history_with(saver, config, conf, filter, before, limit):
            yield snapshot

    async def _history_with(  # type: ignore[misc]
        self: CompiledStateGraph,
        saver: Any,
        config: Mapping[str, Any],
        conf: dict[str, Any],
        filter: dict[str, Any] | None,
        before: Mapping[str, Any] | None,
        limit: int | None,
    ) -> AsyncIterator[StateSnapshot]:
        conf = {**conf, "checkpoint_ns": self._history_ns(conf.get("checkpoint_ns") or "")}
        async for saved in saver.alist(
            {"configurable": conf}, filter=filter, before=before, limit=limit
        ):
            snapshot = self._snapshot(config, saved, live=False)
            yield await self._with_task_states(snapshot, saver, conf, subgraphs=False)

    def get_state_history(  # type: ignore[misc]
        self: CompiledStateGraph, config: Mapping[str, Any], **kwargs: Any
    ) -> Iterator[StateSnapshot]:
        """The sync form of :meth:`aget_state_history`."""
        return _sync_iter(lambda: self.aget_state_history(config, **kwargs))
