"""Spec: what a run hands a saver is the saver's to keep.

A saver written by the user may keep the checkpoint dict it is given, as
LangGraph's own savers may: later steps must not change it. flowcore's
savers serialize what they are given before ``put`` returns, so the run
hands them its checkpoint without copying it; what they store is the same.
"""

from __future__ import annotations

from typing import Any, TypedDict

from flowcore.compat.langgraph import (
    END,
    START,
    BaseCheckpointSaver,
    CheckpointTuple,
    InMemorySaver,
    StateGraph,
)


class S(TypedDict):
    i: int


def _loop(saver: Any, steps: int = 4) -> Any:
    async def step(s: S) -> dict[str, int]:
        return {"i": s["i"] + 1}

    g = StateGraph(S)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["i"] < steps else END, ["step", END])
    return g.compile(checkpointer=saver)


class KeepingSaver(BaseCheckpointSaver[int]):
    """Keeps every checkpoint and metadata dict it is given, by reference."""

    def __init__(self) -> None:
        self.kept: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.versions_then: list[dict[str, Any]] = []

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        return None

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        return None

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.kept.append((checkpoint, metadata))
        self.versions_then.append(
            {k: (dict(v) if isinstance(v, dict) else v) for k, v in checkpoint.items()}
        )
        conf = dict(config["configurable"])
        conf["checkpoint_id"] = checkpoint["id"]
        return {"configurable": conf}

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        return None


async def test_a_saver_that_keeps_what_it_is_given_sees_it_unchanged_by_later_steps() -> None:
    saver = KeepingSaver()
    await _loop(saver).ainvoke({"i": 0}, {"configurable": {"thread_id": "t"}})
    assert len(saver.kept) >= 4
    for (checkpoint, _), then in zip(saver.kept, saver.versions_then, strict=True):
        now = {k: (dict(v) if isinstance(v, dict) else v) for k, v in checkpoint.items()}
        assert now == then
    ids = [c["id"] for c, _ in saver.kept]
    assert len(set(ids)) == len(ids)
    steps = [m["step"] for _, m in saver.kept]
    assert steps == sorted(steps)


async def test_flowcore_savers_store_each_step_as_it_was() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t"}}
    await _loop(saver).ainvoke({"i": 0}, config)
    history = [t async for t in saver.alist(config)]
    # Newest first: each checkpoint holds the value and versions of its own step.
    values = [t.checkpoint["channel_values"].get("i") for t in history]
    assert values[0] == 4
    assert values == sorted(values, key=lambda v: -1 if v is None else v, reverse=True)
    versions = [
        t.checkpoint["channel_versions"]["i"]
        for t in history
        if "i" in t.checkpoint["channel_versions"]
    ]
    # Had the saver kept the run's live dict, every checkpoint would show the last versions.
    assert len(set(map(str, versions))) == len(versions) >= 4
    steps = [t.metadata["step"] for t in history]
    assert steps == list(range(steps[0], steps[0] - len(steps), -1))
