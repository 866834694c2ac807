"""How a compat run starts: loading its thread, the input or ``Command``, resumes.

:class:`~flowcore.compat.langgraph._loop.Run` takes these methods
from :class:`RunInput`, written against it (``self: Run``). mypy
refuses a self type narrower than the class that declares it, hence the
``type: ignore[misc]`` on each ``def``; it still checks every body and
every call against ``Run``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowcore.compat.langgraph._channels import Channel
from flowcore.compat.langgraph._durable import copy_checkpoint
from flowcore.compat.langgraph._error_handlers import (
    ERROR_SOURCE,
)
from flowcore.compat.langgraph._errors import (
    EmptyInputError,
)
from flowcore.compat.langgraph._loop_helpers import (
    NULL_TASK_ID,
    _as_interrupts,
    _is_interrupt_id,
)
from flowcore.compat.langgraph._node import (
    control_writes,
    update_writes,
)
from flowcore.compat.langgraph._planner import (
    ERROR,
    INTERRUPT,
    RESUME,
    _version_key,
)
from flowcore.compat.langgraph._strict_resume import check_resume, strict_resume_on
from flowcore.compat.langgraph._types import START, Command
from flowcore.compat.langgraph._update_steps import moved_past

if TYPE_CHECKING:
    from flowcore.compat.langgraph._loop import Run

__all__ = ["RunInput"]

# The name of the pseudo-task LangGraph applies a run's input (and null writes) under.
INPUT_TASK = "__input__"


class RunInput:
    """The methods of :class:`Run` for how a compat run starts."""

    # What these methods set on the object: declared here for the type checker.
    changed: set[str] | None
    channels: dict[str, Channel]
    checkpoint: dict[str, Any]
    live: set[str]
    metadata: dict[str, Any]
    parent_config: dict[str, Any] | None
    pending: list[tuple[str, str, Any]]
    replay_of: str | None
    resuming: bool
    saved_config: dict[str, Any] | None
    saved_versions: dict[str, Any]
    step: int
    stop: int
    top_version: Any

    async def load(self: Run) -> None:  # type: ignore[misc]
        """Load the thread's checkpoint (or the one ``checkpoint_id`` names)."""
        self.channels = self.graph.new_channels()
        saved = None
        if self.saver is not None and self.as_of is not None:
            before = {"configurable": {"checkpoint_id": self.as_of}}
            async for item in self.saver.alist(self._ckpt_config(), before=before, limit=1):
                saved = item
        elif self.saver is not None:
            saved = await self.saver.aget_tuple(self._ckpt_config())
        if saved is not None:
            self.checkpoint = copy_checkpoint(saved.checkpoint)
            self.metadata = dict(saved.metadata or {})
            self.saved_config = saved.config
            self.parent_config = saved.parent_config
            self.pending = [
                (str(t), c, self.graph.decode_write(c, v)) for t, c, v in saved.pending_writes or ()
            ]
            self.graph.restore_channels(self.channels, self.checkpoint)
            self.saved_versions = dict(self.checkpoint["channel_versions"])
        self._recount()
        self.step = int(self.metadata.get("step", -2)) + 1
        self.stop = self.step + self.limit + 1

    def _recount(self: Run) -> None:  # type: ignore[misc]
        """Rebuild the incremental bookkeeping after channels were loaded wholesale."""
        self.live = {c for c in self.graph.ephemeral_channels if self.channels[c].is_available()}
        versions = self.checkpoint["channel_versions"]
        self.top_version = max(versions.values(), key=_version_key) if versions else None
        self.changed = None

    # ------------------------------------------------------------------ input
    async def first(self: Run) -> None:  # type: ignore[misc]
        """Apply the run input: new input, a resume, or a ``Command``."""
        has_state = bool(self.checkpoint["channel_versions"])
        command = self.input if isinstance(self.input, Command) else None
        resuming = has_state and (self.input is None or command is not None or self.force_resume)
        # A subgraph's config holds an id only when a checkpoint_map addressed it.
        addressed = "checkpoint_id" in self.configurable
        time_travel = addressed and not (command is not None and command.resume is not None)
        if time_travel:
            self.replay_of = str(self.configurable["checkpoint_id"])
            if self.metadata.get("source") in ("update", "fork") and self.parent_config:
                # A fork is newer than what its subgraphs did after its parent: they
                # go back to where they stood at the parent.
                self.replay_of = str(self.parent_config["configurable"]["checkpoint_id"])
        if time_travel:
            # Replaying from a past checkpoint re-runs its tasks and re-asks its questions.
            self.pending = [w for w in self.pending if w[0] == NULL_TASK_ID]
        forks = resuming and time_travel and self.metadata.get("source") not in ("update", "fork")
        carried: list[tuple[str, Any]] = []
        superseded = (
            addressed
            and not time_travel
            and await moved_past(
                self.saver,
                {"thread_id": self.thread_id, "checkpoint_ns": self.ns},
                self.checkpoint.get("id"),
            )
        )
        if command is not None:
            carried = await self._apply_command(command, store=not forks, superseded=superseded)
        if superseded:
            # A resume at a checkpoint the thread has moved past reruns the tasks that
            # finished there (keeping the answers given), as a replay would.
            self.pending = [
                w for w in self.pending if w[0] == NULL_TASK_ID or w[1] in (INTERRUPT, RESUME)
            ]
        null_writes = [(c, v) for t, c, v in self.pending if t == NULL_TASK_ID]
        if null_writes or carried:
            self._mark_input_seen()
            self.apply_writes([], extra=[*null_writes, *carried])
        if resuming:
            self.changed = None
            self.resuming = True
            seen = self.checkpoint["versions_seen"].setdefault(INTERRUPT, {})
            seen.update(self.checkpoint["channel_versions"])
            if forks:
                self.pending = []
                await self._put_checkpoint("fork")
            self.emit_values(force=True)
            if not forks and self.saver is not None and "checkpoint" in self.wants:
                # LangGraph shows the checkpoint a resumed run starts from again.
                self._checkpoint_event(reloaded=True)
            return
        if self.input is None:
            raise EmptyInputError(f"Received no input for {START}")
        # A Command on a new thread is the run's input too (its START task applies it).
        writes = self.graph.input_writes(self.input)
        if not writes:
            raise EmptyInputError(f"Received no input for {self.graph.input_keys}")
        self._mark_input_seen()
        if self.checkpoint["channel_versions"]:
            # A new input on a thread drops whatever the last run left unfinished.
            self.apply_writes(self.prepare(for_execution=False), extra=writes)
        else:
            self.apply_writes([], extra=writes)
        # A low-level graph's input may write its output channels (a StateGraph's never does).
        self.emit_values()
        self.pending = []
        await self._put_checkpoint("input")

    def _mark_input_seen(self: Run) -> None:  # type: ignore[misc]
        """Record that input (or a ``Command``'s writes) was applied, as LangGraph does.

        LangGraph applies input through a pseudo-task named ``__input__`` with no
        triggers, which leaves an empty ``versions_seen["__input__"]`` entry in the
        checkpoint; readers of the checkpoint (and tests comparing it) see it.
        """
        self.checkpoint["versions_seen"].setdefault(INPUT_TASK, {})

    def _pending_interrupt_ids(self: Run) -> list[str]:  # type: ignore[misc]
        answered = {
            t for t, c, _ in self.pending if c not in (INTERRUPT, RESUME, ERROR, ERROR_SOURCE)
        }
        return [
            i.id
            for t, c, v in self.pending
            if c == INTERRUPT and t not in answered
            for i in _as_interrupts(v)
        ]

    async def _apply_command(  # type: ignore[misc]
        self: Run, command: Command[Any], *, store: bool, superseded: bool = False
    ) -> list[tuple[str, Any]]:
        if command.resume is not None:
            if self.saver is None:
                raise RuntimeError("Cannot use Command(resume=...) without checkpointer")
            resume = command.resume
            by_id = isinstance(resume, dict) and all(_is_interrupt_id(k) for k in resume)
            # Strict only at the thread's head (named by id or not), for the graph the
            # caller ran (not a child run): a checkpoint the thread has moved past may
            # rerun finished tasks, whose answered questions then come again.
            strict = (
                strict_resume_on(self.configurable) and self.parent_scope is None and not superseded
            )
            if strict or not by_id:
                check_resume(resume, by_id, self._pending_interrupt_ids(), strict=strict)
            if by_id:
                self.resume_by_id.update(resume)
            else:
                self.null_resume.append(resume)
        writes: list[tuple[str, Any]] = []
        if command.update is not None:
            writes.extend(update_writes(command, self.graph.state_keys))
        writes.extend(control_writes(Command(goto=command.goto)))
        if not writes and command.resume is None:
            raise EmptyInputError("Received empty Command input")
        if not writes or not store:
            return writes
        # Savers keep the first write at each position of a task: the null task's
        # writes accumulate, so an earlier resume's update keeps its slot.
        earlier = [(c, v) for t, c, v in self.pending if t == NULL_TASK_ID]
        self.pending.extend((NULL_TASK_ID, c, v) for c, v in writes)
        if self.saver is not None and self.saved_config is not None:
            encoded = self._encoded([*earlier, *writes])
            await self.saver.aput_writes(self.saved_config, encoded, NULL_TASK_ID, "")
        return []
