"""The run-history contract: specs every :class:`RunHistory` implementation must pass.

The docstrings of :mod:`flowcore.history.protocol` are the contract; each test
here pins one sentence of them down. To check an implementation, subclass
:class:`RunHistoryContract` in a ``test_*.py`` module and say how to make a
fresh, open history::

    class TestMyHistory(RunHistoryContract):
        async def make_history(self, tmp_path: Path) -> RunHistory:
            history = MyHistory(tmp_path / "runs.db")
            await history.open()
            return history

The kit closes the history after each test with ``aclose()``.
"""

from __future__ import annotations

import abc
import datetime as dt
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from flowcore.errors import FlowcoreError, InvalidInputError, SerializationError
from flowcore.history import NodeRecord, RunHistory, RunNotFoundError, RunRecord

__all__ = ["RunHistoryContract", "make_node", "make_run"]


def make_node(node: str, status: str = "completed", **fields: Any) -> NodeRecord:
    """A node record with only the fields a test cares about."""
    values: dict[str, Any] = {
        "started_at": 0.25,
        "duration": 0.5,
        "attempts": 1,
        "outputs": {"value": node} if status == "completed" else None,
        "error": None,
        "skip_reason": None,
        "input_tokens": 0,
        "output_tokens": 0,
        "pass_index": 1,
    }
    values.update(fields)
    return NodeRecord(node=node, status=status, **values)


def make_run(run_id: str, **fields: Any) -> RunRecord:
    """A run record with only the fields a test cares about."""
    values: dict[str, Any] = {
        "pipeline_id": "digest",
        "pipeline_version": 1,
        "user_id": "ada",
        "thread_id": None,
        "status": "completed",
        "started_at": 1_700_000_000.0,
        "duration": 1.5,
        "inputs": {"doc": "text"},
        "nodes": (make_node("n1"),),
        "errors": (),
        "interrupts": (),
        "input_tokens": 0,
        "output_tokens": 0,
    }
    values.update(fields)
    return RunRecord(run_id=run_id, **values)


def full_record(run_id: str = "r-full") -> RunRecord:
    """A record using every field, with values JSON alone could not keep."""
    return make_run(
        run_id,
        pipeline_version="2024-06",
        user_id="ada",
        thread_id="thread-7",
        status="failed",
        started_at=1_700_000_123.25,
        duration=2.75,
        inputs={"doc": "A long text.", "limits": (1, 2), "when": dt.date(2024, 6, 1)},
        nodes=(
            make_node(
                "summarize",
                started_at=0.001,
                duration=0.8,
                attempts=2,
                outputs={"summary": "Short.", "tags": ["a", "b"]},
                input_tokens=120,
                output_tokens=14,
            ),
            make_node(
                "translate",
                "failed",
                started_at=0.81,
                duration=0.3,
                attempts=3,
                error="NodeError: node 'translate' failed after 3 attempts: Boom: no",
            ),
            make_node("publish", "skipped", attempts=0, skip_reason="upstream_failed"),
            make_node("summarize", started_at=1.2, outputs={"summary": "Again."}, pass_index=2),
        ),
        errors=("NodeError: node 'translate' failed after 3 attempts: Boom: no",),
        interrupts=({"question": "Approve?", "draft": ("x", "y")},),
        input_tokens=120,
        output_tokens=14,
        source={"id": "digest", "nodes": [{"id": "summarize", "block_id": "summarize"}]},
        final_state={"results": {"summarize": {"summary": "Again."}}, "count": 3},
    )


def ids(records: list[RunRecord]) -> list[str]:
    return [r.run_id for r in records]


class RunHistoryContract(abc.ABC):
    """Subclass with ``make_history`` to run every contract spec on a history."""

    @abc.abstractmethod
    async def make_history(self, tmp_path: Path) -> RunHistory:
        """A new, empty history, ready for use (opened if it needs opening)."""

    @pytest.fixture
    async def history(self, tmp_path: Path) -> AsyncIterator[RunHistory]:
        history = await self.make_history(tmp_path)
        try:
            yield history
        finally:
            await history.aclose()

    # ----------------------------------------------------------------- save and get

    async def test_it_is_a_run_history(self, history: RunHistory) -> None:
        assert isinstance(history, RunHistory)

    async def test_get_returns_an_equal_record_with_every_field(self, history: RunHistory) -> None:
        record = full_record()
        await history.save(record)

        back = await history.get("r-full")

        assert back == record
        assert back is not record

    async def test_per_node_outputs_errors_timings_and_tokens_come_back_in_order(
        self, history: RunHistory
    ) -> None:
        await history.save(full_record())

        back = await history.get("r-full")

        assert [(n.node, n.status, n.pass_index) for n in back.nodes] == [
            ("summarize", "completed", 1),
            ("translate", "failed", 1),
            ("publish", "skipped", 1),
            ("summarize", "completed", 2),
        ]
        first, failed, skipped, again = back.nodes
        assert first.outputs == {"summary": "Short.", "tags": ["a", "b"]}
        assert (first.started_at, first.duration, first.attempts) == (0.001, 0.8, 2)
        assert (first.input_tokens, first.output_tokens) == (120, 14)
        assert failed.outputs is None
        assert failed.error == "NodeError: node 'translate' failed after 3 attempts: Boom: no"
        assert failed.attempts == 3
        assert skipped.skip_reason == "upstream_failed"
        assert back.nodes_by_name["summarize"] is again
        assert again.outputs == {"summary": "Again."}

    async def test_values_keep_their_python_types(self, history: RunHistory) -> None:
        await history.save(full_record())

        back = await history.get("r-full")

        assert back.inputs["limits"] == (1, 2)
        assert back.inputs["when"] == dt.date(2024, 6, 1)
        assert back.interrupts == ({"question": "Approve?", "draft": ("x", "y")},)
        assert isinstance(back.nodes, tuple)
        assert isinstance(back.errors, tuple)

    async def test_pipeline_version_keeps_its_type(self, history: RunHistory) -> None:
        await history.save(make_run("int", pipeline_version=2))
        await history.save(make_run("str", pipeline_version="2"))

        assert (await history.get("int")).pipeline_version == 2
        assert (await history.get("str")).pipeline_version == "2"

    async def test_a_run_without_nodes_or_optional_fields_round_trips(
        self, history: RunHistory
    ) -> None:
        record = make_run("bare", nodes=(), inputs={}, user_id=None, source=None, final_state=None)
        await history.save(record)

        assert await history.get("bare") == record

    async def test_changing_the_saved_object_afterwards_changes_nothing_stored(
        self, history: RunHistory
    ) -> None:
        inputs: dict[str, Any] = {"doc": "before"}
        await history.save(make_run("r1", inputs=inputs))

        inputs["doc"] = "after"
        back = await history.get("r1")
        back.inputs["doc"] = "mutated copy"  # type: ignore[index]

        assert (await history.get("r1")).inputs == {"doc": "before"}

    async def test_get_of_an_unknown_run_names_it_and_how_to_list_runs(
        self, history: RunHistory
    ) -> None:
        await history.save(make_run("r1"))

        with pytest.raises(RunNotFoundError) as caught:
            await history.get("r-missing")

        assert isinstance(caught.value, LookupError)
        assert isinstance(caught.value, FlowcoreError)
        assert caught.value.run_id == "r-missing"
        assert caught.value.code == "run-not-found"
        assert "'r-missing'" in str(caught.value)
        assert "history.list()" in str(caught.value)

    # ----------------------------------------------------------------- replace

    async def test_saving_the_same_run_id_replaces_the_whole_record(
        self, history: RunHistory
    ) -> None:
        await history.save(full_record("r1"))
        newer = make_run(
            "r1",
            status="completed",
            nodes=(make_node("only", outputs={"ok": True}),),
            errors=(),
            source=None,
        )

        await history.save(newer)

        assert await history.get("r1") == newer
        assert ids(await history.list()) == ["r1"]
        assert ids(await history.list(status="failed")) == []

    # ----------------------------------------------------------------- list

    async def test_list_is_newest_first(self, history: RunHistory) -> None:
        for run_id, started in [("a", 30.0), ("b", 10.0), ("c", 20.0)]:
            await history.save(make_run(run_id, started_at=started))

        assert ids(await history.list()) == ["a", "c", "b"]

    async def test_runs_started_at_the_same_moment_are_ordered_by_run_id_descending(
        self, history: RunHistory
    ) -> None:
        for run_id in ["r2", "r3", "r1"]:
            await history.save(make_run(run_id, started_at=5.0))
        await history.save(make_run("r0", started_at=6.0))

        assert ids(await history.list()) == ["r0", "r3", "r2", "r1"]

    async def test_limit_keeps_the_newest(self, history: RunHistory) -> None:
        for i in range(7):
            await history.save(make_run(f"r{i}", started_at=float(i)))

        assert ids(await history.list(limit=3)) == ["r6", "r5", "r4"]
        assert len(await history.list(limit=None)) == 7
        assert len(await history.list()) == 7

    async def test_the_default_limit_is_fifty(self, history: RunHistory) -> None:
        for i in range(52):
            await history.save(make_run(f"r{i:02}", started_at=float(i), nodes=()))

        listed = await history.list()

        assert len(listed) == 50
        assert listed[0].run_id == "r51"

    @pytest.mark.parametrize("limit", [0, -1, True, 2.5])
    async def test_a_limit_that_is_not_a_positive_int_is_refused(
        self, history: RunHistory, limit: Any
    ) -> None:
        with pytest.raises(InvalidInputError, match="limit"):
            await history.list(limit=limit)

    async def test_listed_records_are_complete(self, history: RunHistory) -> None:
        record = full_record()
        await history.save(record)
        await history.save(make_run("other", started_at=1.0))

        listed = await history.list()

        assert listed[0] == record
        assert listed[1].nodes == (make_node("n1"),)

    @pytest.fixture
    async def populated(self, history: RunHistory) -> RunHistory:
        rows = [
            ("r1", "digest", "ada", "completed", "t1", 1.0),
            ("r2", "digest", "bob", "failed", "t2", 2.0),
            ("r3", "triage", "ada", "failed", "t1", 3.0),
            ("r4", "digest", "ada", "failed", None, 4.0),
            ("r5", "triage", None, "completed", "t3", 5.0),
            ("r6", "digest", "ada", "interrupted", "t1", 6.0),
        ]
        for run_id, pipeline, user, status, thread, started in rows:
            await history.save(
                make_run(
                    run_id,
                    pipeline_id=pipeline,
                    user_id=user,
                    status=status,
                    thread_id=thread,
                    started_at=started,
                )
            )
        return history

    @pytest.mark.parametrize(
        ("filters", "expected"),
        [
            ({"pipeline_id": "digest"}, ["r6", "r4", "r2", "r1"]),
            ({"user_id": "ada"}, ["r6", "r4", "r3", "r1"]),
            ({"status": "failed"}, ["r4", "r3", "r2"]),
            ({"thread_id": "t1"}, ["r6", "r3", "r1"]),
            ({"pipeline_id": "digest", "user_id": "ada"}, ["r6", "r4", "r1"]),
            ({"pipeline_id": "digest", "status": "failed"}, ["r4", "r2"]),
            ({"user_id": "ada", "thread_id": "t1", "status": "failed"}, ["r3"]),
            (
                {"pipeline_id": "digest", "user_id": "ada", "status": "failed", "thread_id": None},
                ["r4"],
            ),
            ({"pipeline_id": "triage", "user_id": "bob"}, []),
            ({"pipeline_id": "nope"}, []),
        ],
    )
    async def test_filters_combine_with_and(
        self, populated: RunHistory, filters: dict[str, Any], expected: list[str]
    ) -> None:
        assert ids(await populated.list(**filters)) == expected

    async def test_a_filter_left_at_none_does_not_filter(self, populated: RunHistory) -> None:
        everything = await populated.list(pipeline_id=None, user_id=None, status=None)

        assert ids(everything) == ["r6", "r5", "r4", "r3", "r2", "r1"]

    async def test_limit_applies_after_filtering(self, populated: RunHistory) -> None:
        assert ids(await populated.list(user_id="ada", limit=2)) == ["r6", "r4"]

    # ----------------------------------------------------------------- delete

    async def test_delete_removes_one_run_and_says_whether_it_was_there(
        self, history: RunHistory
    ) -> None:
        await history.save(full_record("r1"))
        await history.save(make_run("r2"))

        assert await history.delete("r1") is True
        assert await history.delete("r1") is False
        with pytest.raises(RunNotFoundError):
            await history.get("r1")
        assert ids(await history.list()) == ["r2"]
        assert (await history.get("r2")).nodes == (make_node("n1"),)

    async def test_a_deleted_run_id_can_be_saved_again(self, history: RunHistory) -> None:
        await history.save(full_record("r1"))
        await history.delete("r1")
        again = make_run("r1", nodes=(make_node("fresh"),))

        await history.save(again)

        assert await history.get("r1") == again

    # ----------------------------------------------------------------- refusals

    async def test_an_unstorable_value_is_refused_naming_where_it_sits(
        self, history: RunHistory
    ) -> None:
        with socket.socket() as sock:
            bad = make_run(
                "r1",
                nodes=(make_node("n1"), make_node("fetch", outputs={"conn": sock})),
            )
            with pytest.raises(SerializationError) as caught:
                await history.save(bad)

        assert isinstance(caught.value, TypeError)
        assert caught.value.path == "run 'r1'.nodes[1].outputs.conn"
        assert "socket" in str(caught.value)
        with pytest.raises(RunNotFoundError):
            await history.get("r1")
        assert await history.list() == []

    async def test_a_refused_replacement_leaves_the_old_record_intact(
        self, history: RunHistory
    ) -> None:
        old = full_record("r1")
        await history.save(old)

        with pytest.raises(SerializationError, match=r"run 'r1'\.final_state\.lock"):
            await history.save(make_run("r1", final_state={"lock": object()}))

        assert await history.get("r1") == old

    @pytest.mark.parametrize(
        ("record", "message"),
        [
            ("not a record", "RunRecord"),
            (make_run(""), "run_id"),
            (make_run("r1", pipeline_version=1.5), "pipeline_version"),
            (make_run("r1", pipeline_version=True), "pipeline_version"),
            (make_run("r1", user_id=7), "user_id"),
            (make_run("r1", pipeline_id=None), "pipeline_id"),
        ],
    )
    async def test_a_malformed_record_is_refused(
        self, history: RunHistory, record: Any, message: str
    ) -> None:
        with pytest.raises(InvalidInputError, match=message):
            await history.save(record)

        assert await history.list() == []
