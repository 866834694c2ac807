"""Run records as table rows, shared by the SQLite and Postgres run histories.

Both stores keep the same two tables (``run_history_runs`` and
``run_history_nodes``) with the same columns in the same order; what differs
is how each database keeps ``pipeline_version`` (SQLite stores the value as
is, Postgres as JSON text), so the encoder and decoder are passed in. The
functions here do no I/O: values are serialized with the store's own
``dump``/``load`` callables, and errors are theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from flowcore.history.protocol import check_lookup
from flowcore.history.records import NodeRecord, RunRecord

__all__ = [
    "FILTERS",
    "NODE_COLUMNS",
    "RUN_COLUMNS",
    "check_filters",
    "group_records",
    "record_from_rows",
    "record_to_rows",
]

RUN_COLUMNS = (
    "run_id, pipeline_id, pipeline_version, user_id, thread_id, status, started_at, duration, "
    "input_tokens, output_tokens, inputs, errors, interrupts, source, final_state"
)
NODE_COLUMNS = (
    "run_id, position, node, status, pass_index, started_at, duration, attempts, "
    "input_tokens, output_tokens, outputs, error, skip_reason"
)
FILTERS = ("pipeline_id", "user_id", "status", "thread_id")

Row = tuple[Any, ...]
Dump = Callable[[Any, str], bytes]
Load = Callable[[Any, str], Any]


def _as_is(value: Any) -> Any:
    return value


def record_to_rows(
    record: RunRecord, dump: Dump, *, version: Callable[[Any], Any] = _as_is
) -> tuple[Row, list[Row]]:
    """The run row and the node rows of ``record``, in column order.

    ``dump(value, path)`` serializes one value (``path`` names where it sits,
    for errors); ``version`` encodes ``pipeline_version`` for the database.

    Example:
        >>> # run_row, node_rows = record_to_rows(record, serde_dump, version=json.dumps)
    """
    where = f"run {record.run_id!r}"
    run_row = (
        record.run_id,
        record.pipeline_id,
        version(record.pipeline_version),
        record.user_id,
        record.thread_id,
        record.status,
        record.started_at,
        record.duration,
        record.input_tokens,
        record.output_tokens,
        dump(dict(record.inputs), f"{where}.inputs"),
        dump(list(record.errors), f"{where}.errors"),
        dump(list(record.interrupts), f"{where}.interrupts"),
        None if record.source is None else dump(dict(record.source), f"{where}.source"),
        None
        if record.final_state is None
        else dump(dict(record.final_state), f"{where}.final_state"),
    )
    node_rows = [
        (
            record.run_id,
            position,
            n.node,
            n.status,
            n.pass_index,
            n.started_at,
            n.duration,
            n.attempts,
            n.input_tokens,
            n.output_tokens,
            None
            if n.outputs is None
            else dump(dict(n.outputs), f"{where}.nodes[{position}].outputs"),
            n.error,
            n.skip_reason,
        )
        for position, n in enumerate(record.nodes)
    ]
    return run_row, node_rows


def record_from_rows(
    row: Sequence[Any],
    nodes: Iterable[Sequence[Any]],
    load: Load,
    *,
    version: Callable[[Any], Any] = _as_is,
) -> RunRecord:
    """The :class:`RunRecord` of one run row and its node rows (in position order).

    ``load(data, what)`` decodes one stored value (None stays None);
    ``version`` decodes ``pipeline_version``.

    Example:
        >>> # record = record_from_rows(runs[0], nodes, serde_load, version=json.loads)
    """
    run_id = str(row[0])
    where = f"run {run_id!r}"
    return RunRecord(
        run_id=run_id,
        pipeline_id=row[1],
        pipeline_version=version(row[2]),
        user_id=row[3],
        thread_id=row[4],
        status=row[5],
        started_at=row[6],
        duration=row[7],
        input_tokens=row[8],
        output_tokens=row[9],
        inputs=load(row[10], f"the inputs of {where}") or {},
        errors=tuple(load(row[11], f"the errors of {where}") or ()),
        interrupts=tuple(load(row[12], f"the interrupts of {where}") or ()),
        source=load(row[13], f"the source of {where}"),
        final_state=load(row[14], f"the final state of {where}"),
        nodes=tuple(
            NodeRecord(
                node=n[2],
                status=n[3],
                pass_index=n[4],
                started_at=n[5],
                duration=n[6],
                attempts=n[7],
                input_tokens=n[8],
                output_tokens=n[9],
                outputs=load(n[10], f"the outputs of node {n[2]!r} in {where}"),
                error=n[11],
                skip_reason=n[12],
            )
            for n in nodes
        ),
    )


def check_filters(
    pipeline_id: str | None, user_id: str | None, status: str | None, thread_id: str | None
) -> dict[str, str]:
    """The filters given (column -> value), each checked; None ones are left out.

    Example:
        >>> check_filters("digest", None, "failed", None)
        {'pipeline_id': 'digest', 'status': 'failed'}
    """
    given = dict(zip(FILTERS, (pipeline_id, user_id, status, thread_id), strict=True))
    for name, value in given.items():
        check_lookup(name, value, optional=True)
    return {column: value for column, value in given.items() if value is not None}


def group_records(
    runs: Iterable[Sequence[Any]],
    nodes: Iterable[Sequence[Any]],
    build: Callable[[Sequence[Any], Iterable[Sequence[Any]]], RunRecord],
) -> list[RunRecord]:
    """One record per run row, in the runs' order, each with its own node rows.

    Example:
        >>> group_records([], [], lambda row, nodes: None)
        []
    """
    by_run: dict[str, list[Sequence[Any]]] = {}
    for n in nodes:
        by_run.setdefault(str(n[0]), []).append(n)
    return [build(row, by_run.get(str(row[0]), ())) for row in runs]
