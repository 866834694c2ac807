"""``map_debug_tasks``: the debug stream's ``task`` payloads, built from any task-like object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowcore.compat.langgraph import map_debug_tasks


@dataclass
class _Task:
    id: str = "t1"
    name: str = "tools"
    input: Any = field(default_factory=list)
    triggers: list[str] = field(default_factory=lambda: ["branch:to:tools"])
    config: dict[str, Any] | None = None


def test_a_payload_holds_the_tasks_fields_and_its_users_metadata_only() -> None:
    config = {
        "metadata": {"team": "search", "thread_id": "th", "langgraph_step": 3},
        "tags": ["seq:step:2", "beta"],
    }
    [payload] = map_debug_tasks([_Task(config=config)])
    assert payload == {
        "id": "t1",
        "name": "tools",
        "input": [],
        "triggers": ["branch:to:tools"],
        "metadata": {"team": "search", "tags": ["beta"]},
    }


def test_no_metadata_key_when_nothing_of_the_users_is_left() -> None:
    bookkeeping = {"metadata": {"langgraph_node": "tools"}, "tags": ["seq:step:1"]}
    for config in (None, {}, {"metadata": {}}, bookkeeping):
        [payload] = map_debug_tasks([_Task(config=config)])
        assert "metadata" not in payload


def test_the_metadata_is_a_copy_and_hidden_tasks_are_skipped() -> None:
    metadata = {"team": "a"}
    shown, hidden = (
        _Task(config={"metadata": metadata}),
        _Task(id="t2", config={"tags": ["langsmith:hidden"]}),
    )
    payloads = list(map_debug_tasks([shown, hidden]))
    metadata["team"] = "changed"
    assert [p["id"] for p in payloads] == ["t1"]
    assert payloads[0]["metadata"] == {"team": "a"}
