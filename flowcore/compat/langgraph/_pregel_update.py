"""Editing a compat graph's state: ``update_state``, ``bulk_update_state``, clearing node caches.

:class:`~flowcore.compat.langgraph._pregel.CompiledStateGraph` takes these methods
from :class:`StateUpdating`, written against it (``self: CompiledStateGraph``). mypy
refuses a self type narrower than the class that declares it, hence the
``type: ignore[misc]`` on each ``def``; it still checks every body and
every call against ``CompiledStateGraph``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph._copy_fork import COPY, copy_checkpoint_update
from flowcore.compat.langgraph._errors import InvalidUpdateError
from flowcore.compat.langgraph._lent_saver import lent_saver
from flowcore.compat.langgraph._loop import INTERRUPT, Run, Task
from flowcore.compat.langgraph._loop_helpers import NULL_TASK_ID, empty_checkpoint
from flowcore.compat.langgraph._node import (
    call_with_config,
    control_writes,
    target_writes,
    update_writes,
)
from flowcore.compat.langgraph._pregel_helpers import (
    INPUT_NODE,
    _nobody,
    _sortable,
    _sync_call,
)
from flowcore.compat.langgraph._subgraph_travel import (
    stable_ns,
    subgraph_at,
    with_checkpoint_map,
)
from flowcore.compat.langgraph._types import (
    END,
    START,
    StateUpdate,
)
from flowcore.compat.langgraph._update_steps import close_superstep, moved_past

if TYPE_CHECKING:
    from flowcore.compat.langgraph._pregel import CompiledStateGraph


__all__ = ["StateUpdating"]


class StateUpdating:
    """The methods of :class:`CompiledStateGraph` for editing a compat graph's state."""

    async def aupdate_state(  # type: ignore[misc]
        self: CompiledStateGraph,
        config: Mapping[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """Write ``values`` to the thread as if node ``as_node`` had returned them.

        The update goes through the reducers and follows ``as_node``'s edges,
        so ``next`` becomes what runs after that node. Returns the config of
        the new checkpoint.

        Example:
            >>> # app.update_state(config, {"approved": True}, as_node="review")
        """
        return await self.abulk_update_state(config, [[StateUpdate(values, as_node, task_id)]])

    async def abulk_update_state(  # type: ignore[misc]
        self: CompiledStateGraph,
        config: Mapping[str, Any],
        supersteps: Sequence[Sequence[StateUpdate]],
    ) -> dict[str, Any]:
        """Apply several supersteps of updates, each as one new checkpoint.

        The updates of one superstep are applied together, as the writes of
        parallel nodes are (so reducers see all of them at once); each needs
        its ``as_node`` when there are several. Returns the config of the last
        checkpoint made.

        Raises:
            ValueError: no supersteps, or a superstep with no updates.
            InvalidUpdateError: an update names no node, or a node that does not exist.

        Example:
            >>> # app.bulk_update_state(config, [[StateUpdate({"n": 1}, "a"),
            >>> #                                 StateUpdate({"n": 2}, "b")]])
        """
        return await self._bulk_update_with(None, config, supersteps)

    async def _bulk_update_with(  # type: ignore[misc]
        self: CompiledStateGraph,
        saver: Any,
        config: Mapping[str, Any],
        supersteps: Sequence[Sequence[StateUpdate]],
        *,
        route: bool = True,
    ) -> dict[str, Any]:
        """:meth:`abulk_update_state` on ``saver`` (``None``: this graph's own)."""
        if not supersteps:
            raise ValueError("No supersteps provided")
        if any(not updates for updates in supersteps):
            raise ValueError("No updates provided")
        saver = saver or self._saver(config)
        # A config lending a saver addresses this very graph, whatever its namespace.
        route = route and lent_saver(config) is None
        ns = (config.get("configurable") or {}).get("checkpoint_ns") or ""
        sub = subgraph_at(self, ns) if route else None
        if route and ns and sub is None:
            # This graph's nodes and channels would write the wrong state there.
            raise ValueError(f"Subgraph {stable_ns(ns)} not found")
        if sub is not None:
            # A subgraph's config: the update is the subgraph's, on this graph's saver.
            made: dict[str, Any] = await sub._bulk_update_with(
                sub.checkpointer or saver, config, supersteps, route=False
            )
            return made
        made = {}
        for updates in supersteps:
            # Each superstep starts from the checkpoint the one before made.
            conf = {**dict(config.get("configurable") or {}), **made.get("configurable", {})}
            made = await self._update_superstep(
                {**dict(config), "configurable": conf}, [StateUpdate(*u) for u in updates], saver
            )
        return made

    def bulk_update_state(  # type: ignore[misc]
        self: CompiledStateGraph,
        config: Mapping[str, Any],
        supersteps: Sequence[Sequence[StateUpdate]],
    ) -> dict[str, Any]:
        """The sync form of :meth:`abulk_update_state`.

        Example:
            >>> # app.bulk_update_state(config, [[StateUpdate({"n": 1}, as_node="a")]])
        """
        return _sync_call(lambda: self.abulk_update_state(config, supersteps))

    async def _update_superstep(  # type: ignore[misc]
        self: CompiledStateGraph, config: Mapping[str, Any], updates: list[StateUpdate], saver: Any
    ) -> dict[str, Any]:
        conf = dict(config.get("configurable") or {})
        # A checkpointer=True subgraph's one history, whichever task's config names it.
        conf["checkpoint_ns"] = self._history_ns(conf.get("checkpoint_ns") or "")
        saved = await saver.aget_tuple({"configurable": conf})
        run = Run(
            self,
            None,
            {**dict(config), "configurable": conf},
            sink=_nobody,
            durability="sync",
            interrupt_before=(),
            interrupt_after=(),
            # Task ids depend on the namespace: the updates stand in for the real tasks.
            checkpoint_ns=conf["checkpoint_ns"],
        )
        run.wants = set()
        run.channels = self.new_channels()
        if saved is not None:
            run.checkpoint = {
                **saved.checkpoint,
                "channel_values": dict(saved.checkpoint["channel_values"]),
                "channel_versions": dict(saved.checkpoint["channel_versions"]),
                "versions_seen": {k: dict(v) for k, v in saved.checkpoint["versions_seen"].items()},
            }
            self.restore_channels(run.channels, run.checkpoint)
            run._recount()
            run.saved_config = saved.config
            run.saved_versions = dict(saved.checkpoint["channel_versions"])
            step = int((saved.metadata or {}).get("step", -1))
        else:
            run.checkpoint = empty_checkpoint()
            step = -1
        # The update's checkpoint keeps the parents of the one it builds on (a
        # subgraph's config also maps its own namespace, which is no parent of it).
        run.configurable["checkpoint_map"] = dict(
            ((saved.metadata or {}).get("parents") or {}) if saved is not None else {}
        )
        if any(u.as_node == COPY for u in updates):
            return await copy_checkpoint_update(self, run, saved, config, saver, updates)
        if any(u.as_node == INPUT_NODE for u in updates):
            # As a run's input: the START channel gets it, as invoke() would write it.
            if len(updates) > 1:
                raise InvalidUpdateError("Cannot apply multiple updates when updating as input")
            if updates[0].values is None:
                raise InvalidUpdateError(f"Received no input writes for {START}")
            run.apply_writes([], extra=[(START, updates[0].values)])
            return await self._save_update(
                run, conf, saver, "input", step + 1 if saved is not None else -1
            )
        if updates[0].values is None and updates[0].as_node == END:
            if len(updates) > 1:
                raise InvalidUpdateError("Cannot apply multiple updates when clearing state")
            if saved is not None:
                close_superstep(run, saved, step)
            return await self._save_update(run, conf, saver, "update", step + 1)
        if len(updates) == 1 and updates[0].as_node is None:
            updates = [updates[0]._replace(as_node=self._guess_writer(run.checkpoint))]
        # An update stands in for a task the checkpoint had scheduled for its node: its
        # writes are stored as that task's, so the history shows them as its result.
        scheduled: dict[str, list[Task]] = {}
        if saved is not None:
            run.step = step + 1  # task ids depend on the step they run in
            for planned in run.prepare(for_execution=False):
                scheduled.setdefault(planned.name, []).append(planned)
        # The writes stand as the tasks' results on the checkpoint they build on, unless
        # the thread has moved past it: its other children would read them too.
        keeps_writes = saved is not None and not (
            conf.get("checkpoint_id") and await moved_past(saver, conf, saved.checkpoint["id"])
        )
        tasks: list[Task] = []
        for index, (values, as_node, task_id) in enumerate(updates):
            if as_node is None:
                raise InvalidUpdateError("as_node is required when applying multiple updates")
            if as_node not in self.nodes and as_node not in (START, END):
                raise InvalidUpdateError(f"Node {as_node} does not exist")
            planned_for = scheduled.get(as_node) or []
            stands_in = planned_for.pop(0) if planned_for and task_id is None else None
            task = await self._update_task(
                run, values, as_node, stands_in.id if stands_in is not None else task_id, index
            )
            tasks.append(task)
            if keeps_writes and task.id != NULL_TASK_ID:
                encoded = [(c, self.encode_write(c, v)) for c, v in task.writes]
                path = stands_in.sort_key if stands_in is not None else ""
                await saver.aput_writes(saved.config, encoded, task.id, path)
        run.apply_writes(tasks)
        return await self._save_update(run, conf, saver, "update", step + 1)

    async def _save_update(  # type: ignore[misc]
        self: CompiledStateGraph,
        run: Run,
        conf: Mapping[str, Any],
        saver: Any,
        source: str,
        step: int,
    ) -> dict[str, Any]:
        run.step = step
        run.thread_id = conf.get("thread_id")
        run.saver = saver
        run.ns = conf.get("checkpoint_ns", "")
        await run._put_checkpoint(source)
        assert run.saved_config is not None
        made: dict[str, Any] = with_checkpoint_map(run.saved_config, run.metadata)
        return made

    async def _update_task(  # type: ignore[misc]
        self: CompiledStateGraph,
        run: Run,
        values: Any,
        as_node: str,
        task_id: str | None,
        index: int = 0,
    ) -> Task:
        """The task whose writes are ``values`` as node ``as_node`` returned them.

        ``index`` is the update's place among those applied together: their writes
        are folded in that order, whatever nodes they stand for.
        """
        if as_node == END:
            writes: list[tuple[str, Any]] = []
        else:
            writes = (
                update_writes(values, self.input_keys)
                if as_node == START
                else self.result_writes(as_node, values)
            )
            writes.extend(control_writes(values))
            writes.extend(self.static_writes[as_node])
            for branch in self.branches.get(as_node, ()):
                fresh = self.local_read(as_node, run.channels, writes, branch.input_schema)
                if (
                    branch.input_schema is None
                    and isinstance(fresh, dict)
                    and isinstance(values, dict)
                ):
                    # The router sees the update's own keys too, as after a node.
                    fresh = {**values, **fresh}
                # Called as the run loop calls a router: it may be async or ask for config.
                picked = await call_with_config(
                    branch.path, fresh, run.config, {}, self.call_shape(branch.path), inline=True
                )
                writes.extend(target_writes(self.branch_targets(branch, picked)))
        return Task(
            task_id or NULL_TASK_ID,
            as_node,
            ("__pregel_update", index),
            None,
            (INTERRUPT,),
            writes,
        )

    def update_state(  # type: ignore[misc]
        self: CompiledStateGraph,
        config: Mapping[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """The sync form of :meth:`aupdate_state`."""
        return _sync_call(lambda: self.aupdate_state(config, values, as_node, task_id))

    def _guess_writer(self: CompiledStateGraph, checkpoint: Mapping[str, Any]) -> str:  # type: ignore[misc]
        seen = checkpoint.get("versions_seen") or {}
        if len(self.nodes) == 1 and START not in seen:
            return next(iter(self.nodes))
        last = sorted(
            (_sortable(v), n)
            for n, s in seen.items()
            # START counts: after a run's input, it is the last writer (its edges then
            # lead to the nodes the input scheduled).
            if n in self.nodes or n == START
            for v in s.values()
        )
        if not last:
            return START
        if len(last) == 1 or last[-1][0] != last[-2][0]:
            writer: str = last[-1][1]
            return writer
        raise InvalidUpdateError("Ambiguous update, specify as_node")

    async def aclear_cache(self: CompiledStateGraph, nodes: Sequence[str] | None = None) -> None:  # type: ignore[misc]
        """Forget the cached results of ``nodes`` (default: every node).

        Example:
            >>> # await app.aclear_cache(["search"])
        """
        if self.cache is None:
            raise ValueError("No cache is set for this graph. Cannot clear cache.")
        await self.cache.clear([n for n in (nodes or self.nodes) if n in self.nodes])

    def clear_cache(self: CompiledStateGraph, nodes: Sequence[str] | None = None) -> None:  # type: ignore[misc]
        """The sync form of :meth:`aclear_cache`.

        Example:
            >>> # app.clear_cache()
        """
        _sync_call(lambda: self.aclear_cache(nodes))
