"""Spec: a resumed run shows the checkpoint it starts from in ``debug``/``checkpoints``.

As LangGraph does, the first record of a resumed run on a thread is the saved
checkpoint it goes on from, its upcoming tasks showing how far the step's
pending writes say each got (the questions a paused task asked). A ``@task``
call answered from the step's saved writes is listed as a task of the step,
with no result of its own. Under ``durability="exit"`` each checkpoint record
names its own checkpoint id.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from flowcore.compat.langgraph import Command, InMemorySaver, entrypoint, interrupt, task


def _app() -> Any:
    @task
    def falsy() -> bool:
        return False

    @entrypoint(checkpointer=InMemorySaver())
    def app(state: dict[str, Any]) -> dict[str, Any]:
        falsy().result()
        return {"answer": interrupt("question")}

    return app


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_resume_shows_starting_checkpoint(durability: str) -> None:
    app = _app()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    first = list(app.stream({"a": 1}, config, stream_mode="debug", durability=durability))
    start = first[0]
    assert start["type"] == "checkpoint"
    resumed = list(
        app.stream(Command(resume="yes"), config, stream_mode="debug", durability=durability)
    )
    head = resumed[0]
    assert head["type"] == "checkpoint"
    assert head["step"] == -1
    payload = head["payload"]
    assert (
        payload["config"]["configurable"]["checkpoint_id"]
        == (start["payload"]["config"]["configurable"]["checkpoint_id"])
    )
    (entry,) = payload["tasks"]
    assert [i["value"] for i in entry["interrupts"]] == ["question"]
    # The @task call answered from saved writes is listed, without a result record.
    listed = [r["payload"]["name"] for r in resumed if r["type"] == "task"]
    results = [r["payload"]["name"] for r in resumed if r["type"] == "task_result"]
    assert listed == ["app", "falsy"]
    assert results == ["app"]
    # The checkpoint the resumed run makes names its own id.
    last = resumed[-1]
    assert last["type"] == "checkpoint"
    assert (
        last["payload"]["config"]["configurable"]["checkpoint_id"]
        != (payload["config"]["configurable"]["checkpoint_id"])
    )


def test_fresh_run_has_no_reloaded_record() -> None:
    app = _app()
    config = {"configurable": {"thread_id": "t"}}
    records = list(app.stream({"a": 1}, config, stream_mode="checkpoints"))
    assert [r["metadata"]["source"] for r in records] == ["input"]
