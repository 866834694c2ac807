"""What the run history keeps about one run: :class:`RunRecord` and its :class:`NodeRecord` rows.

:func:`record_from_result` turns the :class:`~flowcore.result.RunResult` a
run hands back into a record, adding what only the caller knows: which
pipeline (and version) ran, for which user, when it started, with which
inputs, and the pipeline document itself so the run can be recompiled later.
Given the run's redactor, it scrubs every secret from the record (outputs,
errors, inputs, interrupts, final state) before anything is stored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowcore.checkpoint.serde import check_storable
from flowcore.errors import SerializationError
from flowcore.result import NodeRun, RunResult
from flowcore.secrets import Redactor, scrub

__all__ = ["NodeRecord", "RunRecord", "error_text", "record_from_result", "storable_record"]


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One execution (or skip) of one node in a recorded run.

    ``started_at`` is seconds since the run started (as in
    :class:`~flowcore.result.NodeRun`); ``duration`` includes retries.
    ``outputs`` is what the node produced (None unless it completed);
    ``error`` reads ``"<ExceptionType>: <message>"``. ``pass_index`` is the
    node run's pass through a graph with cycles, as the engine counts them
    (1 for the first pass; 0 where it is not known).

    Example:
        >>> rec = NodeRecord("n1", "completed", 0.0, 0.5, 1, {"summary": "s"}, None, None, 12, 3)
        >>> (rec.ok, rec.total_tokens)
        (True, 15)
    """

    node: str
    status: str
    started_at: float
    duration: float
    attempts: int
    outputs: Mapping[str, Any] | None
    error: str | None
    skip_reason: str | None
    input_tokens: int
    output_tokens: int
    pass_index: int = 0

    @property
    def ok(self) -> bool:
        """True when the node completed."""
        return self.status == "completed"

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def to_data(self) -> dict[str, Any]:
        """The record as a plain dict (values as stored, not JSON-encoded).

        Example:
            >>> NodeRecord("a", "skipped", 0.0, 0.0, 0, None, None, "upstream_failed", 0, 0
            ...            ).to_data()["skip_reason"]
            'upstream_failed'
        """
        return {
            "node": self.node,
            "status": self.status,
            "started_at": self.started_at,
            "duration": self.duration,
            "attempts": self.attempts,
            "outputs": None if self.outputs is None else dict(self.outputs),
            "error": self.error,
            "skip_reason": self.skip_reason,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "pass_index": self.pass_index,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> NodeRecord:
        """Rebuild a record from :meth:`to_data`'s dict.

        Example:
            >>> rec = NodeRecord("a", "completed", 0.0, 0.1, 1, {"x": 1}, None, None, 0, 0)
            >>> NodeRecord.from_data(rec.to_data()) == rec
            True
        """
        return cls(
            node=data["node"],
            status=data["status"],
            started_at=data["started_at"],
            duration=data["duration"],
            attempts=data["attempts"],
            outputs=data.get("outputs"),
            error=data.get("error"),
            skip_reason=data.get("skip_reason"),
            input_tokens=data.get("input_tokens", 0),
            output_tokens=data.get("output_tokens", 0),
            pass_index=data.get("pass_index", 0),
        )


@dataclass(frozen=True, slots=True)
class RunRecord:
    """Everything the history keeps about one run.

    ``started_at`` is epoch seconds; ``duration`` is seconds. ``nodes`` lists
    every node execution and skip in the order they ended; ``errors`` are
    ``"<ExceptionType>: <message>"`` strings; ``interrupts`` are the values
    the run's interrupts asked. ``source`` is the pipeline (or plan) JSON
    document that ran, so a later resume can recompile it; ``final_state``
    is the state the run ended with.

    Example:
        >>> rec = RunRecord("r1", "digest", 1, "ada", None, "completed", 1700000000.0, 0.5,
        ...                 {"doc": "..."}, (), (), (), 10, 2)
        >>> (rec.ok, rec.total_tokens)
        (True, 12)
    """

    run_id: str
    pipeline_id: str
    pipeline_version: int | str
    user_id: str | None
    thread_id: str | None
    status: str
    started_at: float
    duration: float
    inputs: Mapping[str, Any]
    nodes: tuple[NodeRecord, ...]
    errors: tuple[str, ...]
    interrupts: tuple[Any, ...]
    input_tokens: int
    output_tokens: int
    source: Mapping[str, Any] | None = None
    final_state: Mapping[str, Any] | None = field(default=None)

    @property
    def ok(self) -> bool:
        """True when the run completed."""
        return self.status == "completed"

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens of the whole run."""
        return self.input_tokens + self.output_tokens

    @property
    def nodes_by_name(self) -> dict[str, NodeRecord]:
        """Each node's last record (a node in a cycle can have several; see :meth:`runs_of`).

        Example:
            >>> n = NodeRecord("a", "completed", 0.0, 0.1, 1, {"x": 1}, None, None, 0, 0)
            >>> RunRecord("r", "p", 1, None, None, "completed", 0.0, 0.1, {}, (n,), (), (),
            ...           0, 0).nodes_by_name["a"].outputs
            {'x': 1}
        """
        return {rec.node: rec for rec in self.nodes}

    def runs_of(self, node: str) -> tuple[NodeRecord, ...]:
        """Every record of ``node``, in the order they ended.

        Example:
            >>> RunRecord("r", "p", 1, None, None, "completed", 0.0, 0.1, {}, (), (), (),
            ...           0, 0).runs_of("a")
            ()
        """
        return tuple(rec for rec in self.nodes if rec.node == node)

    def to_data(self) -> dict[str, Any]:
        """The record as a plain dict (values as stored, not JSON-encoded).

        Example:
            >>> RunRecord("r", "p", 1, None, None, "failed", 0.0, 0.1, {}, (), ("E: x",), (),
            ...           0, 0).to_data()["errors"]
            ['E: x']
        """
        return {
            "run_id": self.run_id,
            "pipeline_id": self.pipeline_id,
            "pipeline_version": self.pipeline_version,
            "user_id": self.user_id,
            "thread_id": self.thread_id,
            "status": self.status,
            "started_at": self.started_at,
            "duration": self.duration,
            "inputs": dict(self.inputs),
            "nodes": [rec.to_data() for rec in self.nodes],
            "errors": list(self.errors),
            "interrupts": list(self.interrupts),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "source": None if self.source is None else dict(self.source),
            "final_state": None if self.final_state is None else dict(self.final_state),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> RunRecord:
        """Rebuild a record from :meth:`to_data`'s dict.

        Example:
            >>> rec = RunRecord("r", "p", "v2", None, "t", "interrupted", 0.0, 0.1, {"q": 1},
            ...                 (), (), ({"ask": "ok?"},), 0, 0)
            >>> RunRecord.from_data(rec.to_data()) == rec
            True
        """
        return cls(
            run_id=data["run_id"],
            pipeline_id=data["pipeline_id"],
            pipeline_version=data["pipeline_version"],
            user_id=data.get("user_id"),
            thread_id=data.get("thread_id"),
            status=data["status"],
            started_at=data["started_at"],
            duration=data["duration"],
            inputs=data.get("inputs") or {},
            nodes=tuple(NodeRecord.from_data(n) for n in data.get("nodes") or ()),
            errors=tuple(data.get("errors") or ()),
            interrupts=tuple(data.get("interrupts") or ()),
            input_tokens=data.get("input_tokens", 0),
            output_tokens=data.get("output_tokens", 0),
            source=data.get("source"),
            final_state=data.get("final_state"),
        )


def error_text(error: BaseException) -> str:
    """How the history writes an error: ``"<ExceptionType>: <message>"``.

    Example:
        >>> error_text(ValueError("bad input"))
        'ValueError: bad input'
    """
    return f"{type(error).__name__}: {error}"


def _usage_records(update: Mapping[str, Any] | None, node: str) -> list[Mapping[str, Any]] | None:
    """The ``block_runs`` usage records inside one block node's own update, or None if none.

    A LangGraph-style node's calls are metered when they are made (see
    ``flowcore.compat.langgraph._call_records``); the ``usage_metadata`` of the
    messages it returns is never counted again here.
    """
    if not isinstance(update, Mapping):
        return None
    runs = update.get("block_runs")
    if not isinstance(runs, Sequence) or isinstance(runs, str):
        return None
    mine = [r for r in runs if isinstance(r, Mapping) and r.get("node") == node]
    return mine or None


def _usage_record(run: NodeRun) -> Mapping[str, Any]:
    """A node run's metered usage, in the shape of a ``block_runs`` record."""
    return {"input_tokens": run.usage.input_tokens, "output_tokens": run.usage.output_tokens}


def _tokens(records: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    def count(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return (
        sum(count(r.get("input_tokens")) for r in records),
        sum(count(r.get("output_tokens")) for r in records),
    )


def _state_usage(
    state: Mapping[str, Any], runs: Sequence[NodeRun], covered: set[int]
) -> dict[int, list[Mapping[str, Any]]]:
    """Usage records from ``state["block_runs"]`` for completed runs whose update had none.

    ``block_runs`` accumulates over a thread, so only the newest records of a
    node can belong to this run: the k completed executions of a node get its
    last k records, oldest to oldest.
    """
    all_runs = state.get("block_runs")
    if not isinstance(all_runs, Sequence) or isinstance(all_runs, str):
        return {}
    wanting: dict[str, list[int]] = {}
    for index, run in enumerate(runs):
        if run.status == "completed" and index not in covered:
            wanting.setdefault(run.node, []).append(index)
    found: dict[int, list[Mapping[str, Any]]] = {}
    for node, indexes in wanting.items():
        records = [r for r in all_runs if isinstance(r, Mapping) and r.get("node") == node]
        tail = records[-len(indexes) :] if records else []
        # Align from the end: the last execution gets the last record.
        for index, record in zip(reversed(indexes), reversed(tail), strict=False):
            found[index] = [record]
    return found


def _outputs(
    run: NodeRun, results: Mapping[str, Any], last_completed: bool
) -> Mapping[str, Any] | None:
    if run.status != "completed":
        return None
    update = run.update
    if isinstance(update, Mapping):
        own = update.get("results")
        if isinstance(own, Mapping) and isinstance(own.get(run.node), Mapping):
            return dict(own[run.node])  # a block node: exactly this execution's outputs
    if last_completed and isinstance(results.get(run.node), Mapping):
        return dict(results[run.node])
    return None if update is None else dict(update)


def record_from_result(
    result: RunResult,
    *,
    pipeline_id: str,
    pipeline_version: int | str,
    user_id: str | None,
    started_at: float,
    inputs: Mapping[str, Any],
    source: Mapping[str, Any] | None = None,
    keep_state: bool = True,
    redactor: Redactor | None = None,
) -> RunRecord:
    """Build the history record of a finished (or paused) run.

    Per node: a block node's ``outputs`` are its outputs (what it wrote under
    ``state["results"][node]``), any other node's are the update it returned.
    Token usage of a node execution is what the runtime metered for its model
    calls (:attr:`~flowcore.result.NodeRun.usage`: every call, failed, retried
    and repaired ones included, so a failed node reports what it spent). An
    execution without metered calls falls back to the ``block_runs`` record a
    block node writes: the one inside that execution's own
    update, so records that earlier runs of the same thread left in
    ``state["block_runs"]`` are never counted again. Where an update carries
    no record, the newest records of that node in ``state["block_runs"]`` are
    used, one per completed execution. The run's totals are its metered usage
    (:attr:`~flowcore.result.RunResult.usage`, which includes a paused node's
    calls) plus the fallback figures of the other nodes.

    Args:
        result: What ``graph.run(...)`` returned.
        pipeline_id: The pipeline (or graph) that ran.
        pipeline_version: Its version.
        user_id: Who the run was for, if anyone.
        started_at: When the run started, in epoch seconds (``time.time()``).
        inputs: The run's input.
        source: The pipeline/plan JSON document that ran.
        keep_state: Keep ``result.state`` as ``final_state`` (default); pass
            False for runs whose state is too big or cannot be stored.
        redactor: The run's redactor; every secret it knows is replaced by
            ``"[REDACTED]"`` throughout the record.

    Example:
        >>> from flowcore.result import RunResult
        >>> result = RunResult(run_id="r1", graph_name="g", graph_version="1",
        ...                    status="completed", state={"x": 1})
        >>> record_from_result(result, pipeline_id="g", pipeline_version=1, user_id=None,
        ...                    started_at=1700000000.0, inputs={}).status
        'completed'
    """
    state = result.state
    raw_results = state.get("results")
    results: Mapping[str, Any] = raw_results if isinstance(raw_results, Mapping) else {}
    runs = result.node_runs

    usage: dict[int, list[Mapping[str, Any]]] = {}
    metered: set[int] = set()
    for index, run in enumerate(runs):
        if run.model_calls:
            # The runtime metered this execution's model calls: exact, whatever its status.
            usage[index] = [_usage_record(run)]
            metered.add(index)
        elif run.status == "completed":
            own = _usage_records(run.update, run.node)
            if own is not None:
                usage[index] = own
    usage.update(_state_usage(state, runs, set(usage)))

    last_completed: dict[str, int] = {}
    for index, run in enumerate(runs):
        if run.status == "completed":
            last_completed[run.node] = index

    nodes: list[NodeRecord] = []
    for index, run in enumerate(runs):
        input_tokens, output_tokens = _tokens(usage.get(index, []))
        nodes.append(
            NodeRecord(
                node=run.node,
                status=run.status,
                started_at=run.started_at,
                duration=run.duration,
                attempts=run.attempts,
                outputs=_outputs(run, results, last_completed.get(run.node) == index),
                error=None if run.error is None else error_text(run.error),
                skip_reason=run.skip_reason,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                pass_index=run.pass_index,
            )
        )
    record = RunRecord(
        run_id=result.run_id,
        pipeline_id=pipeline_id,
        pipeline_version=pipeline_version,
        user_id=user_id,
        thread_id=result.thread_id,
        status=result.status,
        started_at=started_at,
        duration=result.duration,
        inputs=dict(inputs),
        nodes=tuple(nodes),
        errors=tuple(error_text(e) for e in result.errors),
        interrupts=tuple(i.value for i in result.interrupts),
        # The run's meter has every metered call (a paused node's too); the rest
        # (block_runs records of unmetered executions) is only known per node.
        input_tokens=result.usage.input_tokens
        + sum(n.input_tokens for i, n in enumerate(nodes) if i not in metered),
        output_tokens=result.usage.output_tokens
        + sum(n.output_tokens for i, n in enumerate(nodes) if i not in metered),
        source=None if source is None else dict(source),
        final_state=dict(state) if keep_state else None,
    )
    if redactor is not None:
        record = scrub(record, redactor)
    return record


def storable_record(record: RunRecord) -> RunRecord:
    """``record`` with every part a run history cannot store replaced by a note saying why.

    A run that produced a value the serializer refuses (a string with a lone
    surrogate, a too-deep or foreign object) is still worth recording: the
    value becomes ``{"unstorable": "<why>"}``, text fields keep their
    surrogates as ``\\udXXX`` escapes, and ``errors`` gains one line per
    replaced part, so the record says what was left out. A record that can
    be stored as it is comes back unchanged.

    Example:
        >>> rec = RunRecord("r", "p", 1, None, None, "completed", 0.0, 0.1,
        ...                 {"name": "\\ud800"}, (), (), (), 0, 0)
        >>> list(storable_record(rec).inputs)
        ['unstorable']
    """
    try:
        check_storable(record.to_data(), path="record")
    except SerializationError:
        pass
    else:
        if all(_is_text(t) for t in _texts(record)):
            return record
    notes: list[str] = []

    def keep(value: Any, where: str) -> Any:
        try:
            check_storable(value, path=f"run {record.run_id!r}.{where}")
        except SerializationError as exc:
            message = _short(str(exc))
            notes.append(f"RunHistoryError: {where} was not stored: {message}")
            return {"unstorable": message}
        return value

    nodes = tuple(
        dataclasses.replace(
            node,
            node=_text(node.node),
            status=_text(node.status),
            error=None if node.error is None else _text(node.error),
            skip_reason=None if node.skip_reason is None else _text(node.skip_reason),
            outputs=None
            if node.outputs is None
            else keep(dict(node.outputs), f"nodes[{i}].outputs"),
        )
        for i, node in enumerate(record.nodes)
    )
    inputs = keep(dict(record.inputs), "inputs")
    interrupts = tuple(keep(v, f"interrupts[{i}]") for i, v in enumerate(record.interrupts))
    source = None if record.source is None else keep(dict(record.source), "source")
    final = None if record.final_state is None else keep(dict(record.final_state), "final_state")
    version = record.pipeline_version
    return dataclasses.replace(
        record,
        run_id=_text(record.run_id),
        pipeline_id=_text(record.pipeline_id),
        pipeline_version=_text(version) if isinstance(version, str) else version,
        user_id=None if record.user_id is None else _text(record.user_id),
        thread_id=None if record.thread_id is None else _text(record.thread_id),
        status=_text(record.status),
        inputs=inputs,
        nodes=nodes,
        errors=tuple(_text(e) for e in record.errors) + tuple(notes),
        interrupts=interrupts,
        source=source,
        final_state=final,
    )


def _texts(record: RunRecord) -> list[object]:
    found: list[object] = [
        record.run_id,
        record.pipeline_id,
        record.pipeline_version,
        record.user_id,
        record.thread_id,
        record.status,
        *record.errors,
    ]
    for node in record.nodes:
        found += [node.node, node.status, node.error, node.skip_reason]
    return found


def _is_text(value: object) -> bool:
    if not isinstance(value, str) or value.isascii():
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _text(value: str) -> str:
    """``value`` with lone surrogates written as backslash escapes, so UTF-8 can hold it."""
    if _is_text(value):
        return value
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def _short(message: str, width: int = 300) -> str:
    return message if len(message) <= width else message[: width - 3] + "..."
