"""The engine's thread I/O: checkpoints before each batch, saved writes, resume data.

:class:`EngineCheckpoints` is the layer of
:class:`~flowcore.scheduler.engine.RunEngine` that talks to the run's thread
(:class:`~flowcore.scheduler.thread_run.ThreadRun`): it saves the checkpoint
before each batch (and pauses there when asked), stores each finished task's
write at once or leaves it to the checkpoint that follows, emits the
checkpoint events, closes the thread, and reads back what an earlier attempt
saved (completed writes, interrupt resumes). A run without a thread never
calls it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flowcore.checkpoint.protocol import Checkpoint, PendingWrite
from flowcore.errors import FlowcoreError
from flowcore.events import CheckpointEvent
from flowcore.graph.commands import Send
from flowcore.scheduler.engine_state import EmitFn, EngineState
from flowcore.scheduler.outcome import Outcome as _Outcome
from flowcore.scheduler.outcome import RunPaused as _RunPaused
from flowcore.scheduler.persistence import new_checkpoint_id
from flowcore.scheduler.planner import PassState

if TYPE_CHECKING:
    from flowcore.graph.topology import PassPlan

__all__ = ["EngineCheckpoints"]


class EngineCheckpoints(EngineState):
    """Saves a run's checkpoints and task writes to its thread (a layer of ``RunEngine``).

    Example:
        >>> # await engine._checkpoint_before(batch, plan, ps, pass_index, base)
    """

    async def _checkpoint_before(
        self, batch: list[str], plan: PassPlan, ps: PassState, pass_index: int, base: int
    ) -> None:
        """Save where the run stands before ``batch`` runs; pause there if asked."""
        thread = self._thread
        assert thread is not None
        resumed_here = thread.cursor is not None and thread.reuse_head
        pause: str | None = self._pause_next
        if pause is None and thread.interrupt_before.intersection(batch):
            skip_check = (
                resumed_here
                and thread.cursor is not None
                and (thread.cursor.get("pause") == "before")
            )
            if not skip_check:
                pause = "before"
        thread.cursor = None  # only the first batch after a resume is "resumed"
        if resumed_here and not thread.groups and pause is None and self._deferred is None:
            # Resuming into the very batch the saved checkpoint describes:
            # its pending writes stay attached to it, so keep it as the head.
            return
        cursor = {
            "input_from": thread.input_from,
            "pass": pass_index,
            "roots": sorted(plan.roots, key=self._topo.index.__getitem__),
            "base": base,
            "next": list(batch),
            "pause": pause,
            **ps.to_cursor(),
        }
        await self._save_checkpoint(cursor, {})
        self._pause_next = None
        if pause is not None:
            raise _RunPaused

    async def _save_checkpoint(
        self, cursor: Mapping[str, Any] | None, metadata: Mapping[str, Any]
    ) -> None:
        thread = self._thread
        assert thread is not None
        groups = tuple(thread.groups)
        snapshot = None
        if thread.policy.wants_snapshot(groups):
            snapshot = {"values": self.values, "outputs": dict(self.outputs)}
        checkpoint_id = new_checkpoint_id()
        meta = {"run_id": self.run_id, "step": self.step, "source": thread.source, **metadata}
        if thread.input_from is None:
            # The run's first checkpoint keeps its input, for <<input.x>> after a resume.
            thread.input_from = checkpoint_id
            meta["input"] = self._scrub(dict(self._input))
            if cursor is not None:
                cursor = {**cursor, "input_from": checkpoint_id}
        thread.source = "loop"
        cp = Checkpoint(
            thread_id=thread.thread_id,
            checkpoint_id=checkpoint_id,
            parent_id=thread.head_id,
            step=self.step,
            created_at=time.time(),
            writes=groups,
            snapshot=snapshot,
            cursor=cursor,
            metadata=meta,
        )
        try:
            await thread.writer.checkpoint(cp)
        except FlowcoreError:
            # The write this checkpoint was to carry is stored alone if it can be, so a
            # checkpoint that failed for another reason (a lost lease, a full disk) does
            # not cost a finished node its result; this checkpoint's error is the one reported.
            with contextlib.suppress(FlowcoreError):
                await self._store_deferred()
            self._deferred = None
            raise
        self._deferred = None  # its write is in this checkpoint's group (or its cursor)
        if snapshot is not None:
            thread.policy.took_snapshot(snapshot)
        thread.head_id = cp.checkpoint_id
        thread.groups.clear()
        thread.pending.clear()
        emit = self._emit
        if emit is not None:
            self._emit_checkpoint(emit, cp)

    def _emit_checkpoint(self, emit: EmitFn, cp: Checkpoint) -> None:
        # Sent once the writer has taken the checkpoint (stored, queued, or held
        # under "exit": see CheckpointEvent), never for one the writer refused.
        writer = self._thread.writer if self._thread is not None else None
        parent = cp.parent_id
        if writer is not None and writer.durability == "exit":
            # Held checkpoints are stored as one, under the last id, whose parent is
            # the newest checkpoint stored before: name the parent the store will hold.
            parent = writer.persisted_id
        cursor = cp.cursor
        emit(
            CheckpointEvent(
                **self._event_base(cp.step),
                thread_id=cp.thread_id,
                checkpoint_id=cp.checkpoint_id,
                parent_id=parent,
                step=cp.step,
                next=tuple(cursor.get("next", ())) if cursor is not None else (),
            )
        )

    async def _close_thread(self) -> None:
        thread = self._thread
        if thread is None:
            return
        await self._store_deferred()
        await thread.writer.close({"values": self.values, "outputs": dict(self.outputs)})

    async def _store_deferred(self) -> None:
        """Store the write a checkpoint was to carry, when the run stops before that checkpoint."""
        out = self._deferred
        if out is not None:
            self._deferred = None
            await self._persist_node(out)

    def _saved_outcome(self, node: str, level: int, key: str | None = None) -> _Outcome | None:
        """A task whose write an earlier attempt saved: its outcome, without running it."""
        assert self._thread is not None
        key = node if key is None else key
        payload = self._thread.pending.get(key)
        if payload is None or payload.get("status") != "completed":
            return None
        update = payload.get("update")
        return _Outcome(
            node=node,
            level=level,
            started=0.0,
            attempts=int(payload.get("attempts", 0)),
            update=update,
            routes=tuple(payload.get("routes", ())),
            key=key,
            sends=tuple(Send(n, a) for n, a in payload.get("sends", ())),
        )

    def _interrupt_key(self) -> str:
        thread = self._thread
        if thread is not None and thread.head_id is not None:
            return thread.head_id
        return f"{self.run_id}:{self.step}"

    def _resumes_for(self, task: str) -> tuple[Any, ...]:
        thread = self._thread
        if thread is None:
            return ()
        payload = thread.pending.get(task)
        if payload is None or payload.get("status") != "interrupted":
            return ()
        resumes = tuple(payload.get("resumes", ()))
        if task in thread.answers:
            resumes = (*resumes, thread.answers[task])
        return resumes

    async def _persist_node(self, out: _Outcome) -> None:
        """Save a finished node's result at once, so no later failure re-runs it."""
        thread = self._thread
        assert thread is not None
        assert thread.head_id is not None
        payload: dict[str, Any]
        if out.interrupt is not None:
            payload = {
                "status": "interrupted",
                "interrupt": {"id": out.interrupt.id, "value": out.interrupt.value},
                "resumes": list(out.resumes),
            }
        else:
            payload = {
                "status": "completed",
                "update": None if out.update is None else dict(out.update),
                "routes": list(out.routes),
                "attempts": out.attempts,
            }
            if out.sends:
                payload["sends"] = [[s.node, s.arg] for s in out.sends]
        payload = self._scrub(payload)  # resume answers too
        # Keyed by task: each Send task of a node keeps its own saved write.
        await thread.writer.node_write(thread.head_id, PendingWrite(out.key or out.node, payload))
