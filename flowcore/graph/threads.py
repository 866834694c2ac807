"""Runs on threads: opening a thread for a run, and reading or editing its state.

Used by :class:`~flowcore.graph.compiled.CompiledGraph`; the functions here
check what the caller asked for against what the thread holds, so a wrong
resume is refused before anything runs or is written.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from flowcore._shown import shown
from flowcore.checkpoint.protocol import Checkpoint, Checkpointer, PendingWrite
from flowcore.checkpoint.serde import check_storable
from flowcore.errors import InvalidInputError, InvalidUpdateError, ResumeError, SerializationError
from flowcore.graph.commands import Command, Send, split_task_key
from flowcore.graph.constants import END
from flowcore.interrupts import Interrupt, Resume
from flowcore.scheduler.context import NodeContext
from flowcore.scheduler.persistence import (
    CheckpointWriter,
    Durability,
    SavedPoint,
    SnapshotPolicy,
    load_point,
    new_checkpoint_id,
)
from flowcore.scheduler.thread_run import ThreadRun

if TYPE_CHECKING:
    from flowcore.graph.compiled import CompiledGraph

__all__ = [
    "StateSnapshot",
    "check_checkpoint_id",
    "check_thread_id",
    "get_state",
    "open_thread",
    "state_history",
    "update_state",
]

DURABILITIES: tuple[Durability, ...] = ("sync", "async", "exit")


@dataclass(frozen=True, slots=True)
class StateSnapshot:
    """A thread's state at one checkpoint.

    ``next`` names the nodes that run when the thread is resumed (empty when
    its run has finished); ``interrupts`` are questions waiting for an answer.

    Example:
        >>> # snap = await graph.get_state("thread-1"); snap.values["draft"]
    """

    thread_id: str
    checkpoint_id: str
    parent_id: str | None
    values: Mapping[str, Any]
    next: tuple[str, ...]
    interrupts: tuple[Interrupt, ...]
    step: int
    created_at: float
    metadata: Mapping[str, Any] = field(default_factory=dict)


def check_durability(durability: object) -> Durability:
    """Validate a ``durability=`` argument."""
    if durability not in DURABILITIES:
        raise InvalidInputError(
            f"durability={shown(durability)} is not a durability mode; use 'sync', 'async' "
            "or 'exit'"
        )
    return durability


def check_thread_id(thread_id: object) -> str:
    """Validate a ``thread_id=`` argument: a non-empty string.

    Example:
        >>> check_thread_id("t1")
        't1'
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidInputError(f"thread_id must be a non-empty string, got {shown(thread_id)}")
    try:
        thread_id.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate: no store can write or look up such an id.
        raise InvalidInputError(
            f"thread_id {shown(thread_id)} holds a lone surrogate, which is not valid Unicode "
            "text; use an id of plain text"
        ) from None
    return thread_id


def check_checkpoint_id(checkpoint_id: object, name: str = "checkpoint_id") -> str | None:
    """Validate a ``checkpoint_id=`` (or ``before=``) argument: None or an id of plain text.

    Example:
        >>> check_checkpoint_id(None) is None
        True
    """
    if checkpoint_id is None:
        return None
    if not isinstance(checkpoint_id, str) or not checkpoint_id:
        raise InvalidInputError(
            f"{name} must be a checkpoint id (a non-empty string) or None, "
            f"got {shown(checkpoint_id)}; list a thread's checkpoints with get_state_history()"
        )
    try:
        checkpoint_id.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{name} {shown(checkpoint_id)} holds a lone surrogate, so no checkpoint has it; "
            "list a thread's checkpoints with get_state_history()"
        ) from None
    return checkpoint_id


def _require_store(graph: CompiledGraph) -> Checkpointer:
    store = graph.checkpointer
    if store is None:
        raise InvalidInputError(
            f"graph {graph.name!r} has no checkpointer, so it cannot use threads; "
            "compile it with compile(checkpointer=InMemoryCheckpointer()) or a SqliteCheckpointer"
        )
    return store


def check_thread_value(value: Any, *, path: str, thread_id: str) -> None:
    """Refuse, before anything runs, a value that the thread's checkpoints could not hold.

    Every input, answer and state update on a thread is checkpointed; one the
    store cannot write would otherwise fail the run at its first save, after
    nodes had run.
    """
    try:
        check_storable(value, path=path)
    except SerializationError as exc:
        raise InvalidInputError(
            f"{exc}. Runs on thread {thread_id!r} store it in a checkpoint, so nothing "
            "ran and nothing was saved"
        ) from None


def _pending_interrupts(point: SavedPoint) -> dict[str, Interrupt]:
    """Interrupts waiting at a checkpoint, keyed by id."""
    return {i.id: i for i in _waiting_tasks(point).values()}


def _waiting_tasks(point: SavedPoint) -> dict[str, Interrupt]:
    """Interrupts waiting at a checkpoint, keyed by the task that asked (``node`` or ``node#i``)."""
    found: dict[str, Interrupt] = {}
    for key, payload in point.pending.items():
        if payload.get("status") == "interrupted":
            info = payload["interrupt"]
            node, _ = split_task_key(key)
            found[key] = Interrupt(id=info["id"], node=node, value=info["value"])
    return found


def _answers(thread_id: str, tasks: dict[str, Interrupt], resume: Resume) -> dict[str, Any]:
    """Each answer of ``resume``, keyed by the task it resumes."""
    waiting = {i.id: i for i in tasks.values()}
    task_of = {i.id: key for key, i in tasks.items()}
    if not waiting:
        raise ResumeError(
            f"thread {thread_id!r} is not waiting for an answer: no node called interrupt(); "
            "resume it with run(None, thread_id=...) or start a run with new input",
            thread_id=thread_id,
        )
    if resume.by_id is not None:
        if not isinstance(resume.by_id, Mapping) or not all(
            isinstance(i, str) for i in resume.by_id
        ):
            raise ResumeError(
                f"Resume(by_id=...) must map interrupt ids (strings) to answers, got "
                f"{shown(resume.by_id)}; pending: {', '.join(map(repr, waiting))}",
                thread_id=thread_id,
            )
        unknown = [i for i in resume.by_id if i not in waiting]
        if unknown:
            raise ResumeError(
                f"thread {thread_id!r} has no pending interrupt {', '.join(map(shown, unknown))}; "
                f"pending: {', '.join(f'{i!r} (node {w.node!r})' for i, w in waiting.items())}",
                thread_id=thread_id,
            )
        return {task_of[i]: v for i, v in resume.by_id.items()}
    if len(waiting) > 1:
        raise ResumeError(
            f"thread {thread_id!r} has {len(waiting)} pending interrupts "
            f"({', '.join(f'{i!r} from {w.node!r}' for i, w in waiting.items())}); answer each "
            "with Resume(by_id={interrupt_id: value, ...})",
            thread_id=thread_id,
        )
    (only,) = tasks
    return {only: resume.value}


async def open_thread(
    graph: CompiledGraph,
    run_input: Mapping[str, Any] | BaseModel | Resume | Command | None,
    *,
    thread_id: str,
    checkpoint_id: str | None,
    durability: Durability,
) -> tuple[dict[str, Any], Mapping[str, Any], ThreadRun]:
    """Load a thread and decide how this run continues it.

    Returns the starting state, the run's input mapping and the
    :class:`ThreadRun` for the engine. Raises :class:`ResumeError` (or
    :class:`InvalidInputError`) when the request does not fit the thread.
    ``Command(update=u, resume=r)`` first writes ``u`` as
    ``update_state(u)`` would, then resumes with ``r`` (see
    :func:`_command_input`).
    """
    store = _require_store(graph)
    check_thread_id(thread_id)
    check_checkpoint_id(checkpoint_id)
    point = await load_point(store, graph.schema, thread_id, checkpoint_id)
    if isinstance(run_input, Command):
        run_input, point = await _command_input(graph, run_input, point, thread_id, checkpoint_id)
    before = graph.interrupt_before
    after = graph.interrupt_after
    if point is None:
        if isinstance(run_input, Resume) or run_input is None:
            what = "resume it" if isinstance(run_input, Resume) else "continue it"
            raise ResumeError(
                f"thread {thread_id!r} has no checkpoints, so there is nothing to {what}; "
                "start it with run(input, thread_id=...)",
                thread_id=thread_id,
            )
        values = graph.schema.initial(run_input)
        given = _given(run_input)
        check_thread_value(given, path="input", thread_id=thread_id)
        writer = CheckpointWriter(store, thread_id, durability, None)
        return (
            values,
            given,
            ThreadRun(
                thread_id=thread_id,
                writer=writer,
                policy=SnapshotPolicy(),
                head_id=None,
                interrupt_before=before,
                interrupt_after=after,
                run_input=given,
            ),
        )

    cp = point.checkpoint
    tasks = _waiting_tasks(point)
    waiting = {i.id: i for i in tasks.values()}
    policy = SnapshotPolicy(
        snapshot_weight=point.snapshot_weight,
        weight_since=point.weight_since_snapshot,
        deltas_since=point.deltas_since_snapshot,
        force=False,
    )
    writer = CheckpointWriter(store, thread_id, durability, cp.checkpoint_id)
    fork = checkpoint_id is not None
    thread = ThreadRun(
        thread_id=thread_id,
        writer=writer,
        policy=policy,
        head_id=cp.checkpoint_id,
        start_step=cp.step,
        outputs=point.outputs,
        interrupt_before=before,
        interrupt_after=after,
    )
    if isinstance(run_input, Resume):
        if fork:
            raise ResumeError(
                "Resume(...) answers the thread's latest checkpoint; drop checkpoint_id, or "
                "fork from an older checkpoint with run(None, checkpoint_id=...)",
                thread_id=thread_id,
            )
        thread.answers = _answers(thread_id, tasks, run_input)
        check_thread_value(thread.answers, path="resume", thread_id=thread_id)
        run_input = None
    if run_input is None:
        if cp.cursor is None:
            raise ResumeError(
                f"thread {thread_id!r} has finished its run (status "
                f"{cp.metadata.get('status', 'completed')!r}), so there is nothing to resume; "
                "pass new input to start another run on the thread",
                thread_id=thread_id,
            )
        if waiting and not thread.answers and not fork:
            raise ResumeError(
                f"thread {thread_id!r} is waiting for an answer to interrupt "
                f"{', '.join(map(repr, waiting))}; resume it with run(Resume(value), "
                "thread_id=...)",
                thread_id=thread_id,
            )
        thread.cursor = cp.cursor
        thread.reuse_head = not fork
        thread.pending = {} if fork else dict(point.pending)
        thread.source = "fork" if fork else "resume"
        thread.run_input = await _first_input(store, thread_id, cp)
        return point.values, thread.run_input, thread
    if cp.cursor is not None and not fork:
        raise ResumeError(
            f"thread {thread_id!r} has not finished its run (next: "
            f"{', '.join(cp.cursor.get('next', ()))}); resume it with run(None, thread_id=...) "
            "(or Resume(value) if it is waiting for an answer) before giving new input",
            thread_id=thread_id,
        )
    given = _given(run_input)
    unknown = [k for k in given if k not in graph.schema]
    if unknown:
        graph.schema.initial(given)  # raises the standard unknown-key error
    check_thread_value(given, path="input", thread_id=thread_id)
    try:
        values = graph.schema.apply(point.values, [("__input__", given)])
    except InvalidUpdateError as exc:
        raise InvalidInputError(str(exc)) from exc
    thread.groups.append([("__input__", given)])
    thread.run_input = given
    return values, given, thread


async def _command_input(
    graph: CompiledGraph,
    command: Command,
    point: SavedPoint | None,
    thread_id: str,
    checkpoint_id: str | None,
) -> tuple[Resume | None, SavedPoint | None]:
    """What ``run(Command(...), thread_id=t)`` means: an optional update, then a resume.

    The update is checked and answered for first (nothing is written when
    the resume cannot be answered), then written like ``update_state(update)``:
    through the reducers, as writer ``"__update__"``, in a checkpoint of its
    own whose pending node results are kept. The run then resumes from that
    checkpoint with ``Command.resume`` (as ``Resume``), or continues
    (``run(None)``) when there is no resume.
    """
    if command.goto not in ((), [], None):
        raise InvalidInputError(
            "Command(goto=...) as run input is not supported on a native graph; "
            "return it from a node, or start the run with input for the entry nodes"
        )
    if command.update is None and command.resume is None:
        raise InvalidInputError(
            "Command(...) as run input needs resume=... (an answer) or update=... (a write)"
        )
    if checkpoint_id is not None:
        raise ResumeError(
            "Command(...) continues the thread's latest checkpoint; drop checkpoint_id, or "
            "fork from an older checkpoint with run(None, checkpoint_id=...)",
            thread_id=thread_id,
        )
    if point is None:
        raise ResumeError(
            f"thread {thread_id!r} has no checkpoints, so there is nothing to resume; "
            "start it with run(input, thread_id=...)",
            thread_id=thread_id,
        )
    if command.resume is None and point.checkpoint.cursor is None:
        raise ResumeError(
            f"thread {thread_id!r} has finished its run, so there is nothing to resume; use "
            "update_state(...) to write into it, or pass new input to start another run",
            thread_id=thread_id,
        )
    resume: Resume | None = None
    if command.resume is not None:
        tasks = _waiting_tasks(point)
        by_id = command.resume_by_id({i.id: i for i in tasks.values()})
        resume = Resume(by_id=by_id) if by_id is not None else Resume(command.resume)
        _answers(thread_id, tasks, resume)  # refuse a bad answer before writing anything
    if command.update is not None:
        if not isinstance(command.update, Mapping):
            raise InvalidInputError(
                f"Command(update=...) as run input must be a mapping of state keys, got "
                f"{type(command.update).__name__}"
            )
        await update_state(graph, thread_id, command.update)
        point = await load_point(_require_store(graph), graph.schema, thread_id)
    return resume, point


def _given(run_input: Mapping[str, Any] | BaseModel | None) -> dict[str, Any]:
    if isinstance(run_input, BaseModel):
        return {k: getattr(run_input, k) for k in run_input.model_fields_set}
    if run_input is not None and not isinstance(run_input, Mapping):
        raise InvalidInputError(
            f"run input must be a mapping of state keys, Resume(...) or None, got "
            f"{type(run_input).__name__}"
        )
    return dict(run_input or {})


async def _first_input(store: Checkpointer, thread_id: str, cp: Checkpoint) -> dict[str, Any]:
    """The input of the run a checkpoint belongs to, for ``<<input.x>>`` after a resume."""
    source = cp.cursor.get("input_from") if cp.cursor else None
    if source is None:
        return {}
    first = cp if source == cp.checkpoint_id else await store.get(thread_id, source)
    found = first.metadata.get("input") if first is not None else None
    return dict(found) if isinstance(found, Mapping) else {}


# ------------------------------------------------------------------ state API
def _snapshot(point: SavedPoint) -> StateSnapshot:
    cp = point.checkpoint
    cursor = cp.cursor
    return StateSnapshot(
        thread_id=cp.thread_id,
        checkpoint_id=cp.checkpoint_id,
        parent_id=cp.parent_id,
        values=point.values,
        next=tuple(cursor.get("next", ())) if cursor else (),
        interrupts=tuple(_pending_interrupts(point).values()),
        step=cp.step,
        created_at=cp.created_at,
        metadata=cp.metadata,
    )


async def get_state(
    graph: CompiledGraph, thread_id: str, checkpoint_id: str | None = None
) -> StateSnapshot:
    """The state of a thread at its latest (or a given) checkpoint."""
    store = _require_store(graph)
    check_thread_id(thread_id)
    check_checkpoint_id(checkpoint_id)
    point = await load_point(store, graph.schema, thread_id, checkpoint_id)
    if point is None:
        raise ResumeError(f"thread {thread_id!r} has no checkpoints", thread_id=thread_id)
    return _snapshot(point)


async def state_history(
    graph: CompiledGraph, thread_id: str, *, limit: int | None = None, before: str | None = None
) -> list[StateSnapshot]:
    """Snapshots of a thread's checkpoints, newest first."""
    store = _require_store(graph)
    check_thread_id(thread_id)
    check_checkpoint_id(before, "before")
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit < 2**63
    ):
        raise InvalidInputError(
            f"limit must be a whole number >= 1 (below 2**63) or None, got {shown(limit)}"
        )
    found = await store.history(thread_id, limit=limit, before=before)
    out = []
    for cp in found:
        point = await load_point(store, graph.schema, thread_id, cp.checkpoint_id)
        assert point is not None
        out.append(_snapshot(point))
    return out


async def update_state(
    graph: CompiledGraph,
    thread_id: str,
    values: Mapping[str, Any],
    *,
    as_node: str | None = None,
    checkpoint_id: str | None = None,
) -> str:
    """Write ``values`` into a thread through the reducers; return the new checkpoint id.

    Without ``as_node`` the thread goes on where it was (pending node results
    are kept). With ``as_node`` the update counts as that node's output and
    the thread continues from that node's successors.
    """
    store = _require_store(graph)
    check_thread_id(thread_id)
    check_checkpoint_id(checkpoint_id)
    point = await load_point(store, graph.schema, thread_id, checkpoint_id)
    if point is None:
        raise ResumeError(
            f"thread {thread_id!r} has no checkpoints; run it once before updating its state",
            thread_id=thread_id,
        )
    if as_node is not None and (not isinstance(as_node, str) or as_node not in graph.nodes):
        raise InvalidInputError(
            f"as_node={shown(as_node)} is not a node of graph {graph.name!r}; use one of "
            f"{', '.join(map(repr, graph.nodes))}"
        )
    writer_name = as_node or "__update__"
    if not isinstance(values, Mapping):
        raise InvalidInputError(
            f"update_state values must be a mapping of state keys, got {type(values).__name__}"
        )
    update = dict(values)
    check_thread_value(update, path="update", thread_id=thread_id)
    for key in update:
        if key not in graph.schema:
            raise InvalidInputError(
                f"update key {key!r} is not in state schema {graph.schema.name} "
                f"(keys: {', '.join(graph.schema.keys)})"
            )
    try:
        new_values = graph.schema.apply(point.values, [(writer_name, update)])
    except InvalidUpdateError as exc:
        raise InvalidInputError(str(exc)) from exc
    cp = point.checkpoint
    cursor: Mapping[str, Any] | None = cp.cursor
    keep_pending = as_node is None
    if as_node is not None:
        cursor = await _cursor_after(graph, as_node, new_values, cp)
    outputs = dict(point.outputs)
    if as_node is not None:
        outputs[as_node] = update
    new = Checkpoint(
        thread_id=thread_id,
        checkpoint_id=new_checkpoint_id(),
        parent_id=cp.checkpoint_id,
        step=cp.step,
        created_at=time.time(),
        writes=([(writer_name, update)],),
        snapshot=None,
        cursor=cursor,
        metadata={"source": "update", "as_node": as_node},
    )
    await store.put(new)
    if keep_pending:
        for node, payload in point.pending.items():
            await store.put_write(thread_id, new.checkpoint_id, PendingWrite(node, payload))
    return new.checkpoint_id


async def _cursor_after(
    graph: CompiledGraph, node: str, values: Mapping[str, Any], cp: Checkpoint
) -> Mapping[str, Any] | None:
    """A cursor for a new pass rooted at the nodes ``node`` leads to."""
    topo = graph.topology
    targets: list[str] = []
    sends: dict[str, list[Any]] = {}
    for edge in graph.edges:
        if edge.sources == (node,) and edge.target != END:
            targets.append(edge.target)
    for router in graph.routers_by_source.get(node, ()):
        state = graph.schema.view(values)
        args: tuple[Any, ...] = (state,)
        if router.shape.takes_context:
            args = (
                state,
                NodeContext(
                    run_id="update_state", node=node, graph_name=graph.name, superstep=cp.step
                ),
            )
        raw = await router.func(*args) if router.shape.is_async else router.func(*args)
        items: Sequence[Any] = list(raw) if isinstance(raw, list | tuple | set) else [raw]
        for item in items:
            if isinstance(item, Send):
                sends.setdefault(item.node, []).append(item.arg)
                continue
            target = router.path_map[item] if router.path_map is not None else item
            if target != END:
                targets.append(target)
    roots = sorted(set(targets) | set(sends), key=topo.index.__getitem__)
    if not roots:
        return None
    extra: dict[str, Any] = {}
    if sends:  # the same fields a pass started by Sends saves (see the engine's cursor)
        extra = {"sends": sends, "send_roots": sorted(set(sends) - set(targets))}
    return {
        **extra,
        "pass": int(cp.cursor["pass"]) + 1 if cp.cursor else 1,
        "roots": roots,
        "base": cp.step,
        "next": roots,
        "pause": None,
        "res": {},
        "executed": [],
        "poisoned": {},
        "selected": {},
        "next_roots": [],
        "input_from": cp.cursor.get("input_from") if cp.cursor else None,
    }
