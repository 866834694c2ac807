"""Spec: a dataflow pass runs on the pieces it is given, without a RunEngine.

``DataflowPass`` gets the topology, the schema and callbacks for what the run
owns (running a node, recording it); these specs give it a small fake run
that records what each node saw, so the pass's own rules show: a node sees
the pass-start state plus its executed ancestors' writes, the pass ends with
every write folded in (level, declaration) order, and a failure at level L
stops the pass there with the writes below L applied.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from flowcore import START, Graph, append
from flowcore.errors import GraphRecursionError, InvalidUpdateError
from flowcore.graph.spec import NodeSpec
from flowcore.graph.topology import PassPlan
from flowcore.scheduler.dataflow import DataflowPass
from flowcore.scheduler.planner import PassState


class State(TypedDict, total=False):
    log: Annotated[list[str], append]
    total: Annotated[int, operator.add]
    x: str


@dataclass
class Outcome:
    node: str
    level: int
    update: Mapping[str, Any] | None
    failed: bool = False


@dataclass
class FakeRun:
    """The run's side of a pass: each node writes ``writes[node]``; ``fail`` nodes fail."""

    app: Any
    writes: dict[str, dict[str, Any]]
    fail: set[str] = field(default_factory=set)
    recursion_limit: int = 25
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    started: list[tuple[str, int]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    step: int = 0

    def make(self, fail_fast: bool = True) -> DataflowPass[Outcome]:
        return DataflowPass(
            topology=self.app.topology,
            schema=self.app.schema,
            specs=self.app.nodes,
            pool_limit=None,
            recursion_limit=self.recursion_limit,
            fail_fast=fail_fast,
            errors=self.errors,
            run_node=self.run_node,
            absorb=self.absorb,
            skip=self.skip,
            recursion_error=lambda: GraphRecursionError("too deep", limit=self.recursion_limit),
            reach=self.reach,
        )

    async def run_node(self, spec: NodeSpec, view: Mapping[str, Any], level: int) -> Outcome:
        self.seen[spec.name] = dict(view)
        self.started.append((spec.name, level))
        if spec.name in self.fail:
            return Outcome(spec.name, level, None, failed=True)
        return Outcome(spec.name, level, self.writes.get(spec.name))

    def absorb(self, out: Outcome, pass_index: int, ps: PassState) -> bool:
        ps.res[out.node] = out.level
        if out.failed:
            self.errors.append(RuntimeError(out.node))
            ps.poisoned[out.node] = out.node
            return False
        ps.executed.add(out.node)
        if out.update:
            index = self.app.topology.index[out.node]
            ps.writes.append((out.level, index, out.node, out.update))
        return True

    def skip(
        self, node: str, reason: str, plan: PassPlan, ps: PassState, base: int, pass_index: int
    ) -> None:
        ps.res[node] = max((ps.res[p] for p in plan.preds[node]), default=base)
        self.skipped.append((node, reason))

    def reach(self, level: int) -> None:
        self.step = max(self.step, level)


def branches() -> Any:
    """START -> a -> b -> c and START -> d; c and d join into e."""
    graph = Graph(State)
    for name in "abcde":
        graph.add_node(name, lambda s: None)
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c")
    graph.add_edge(START, "d").add_edge(["c", "d"], "e")
    return graph.compile()


async def test_a_node_sees_only_its_ancestors_writes_and_the_pass_folds_all_in_order() -> None:
    app = branches()
    fake = FakeRun(
        app,
        {
            "a": {"log": ["a"], "x": "a"},
            "b": {"log": ["b"]},
            "c": {"log": ["c"], "total": 1},
            "d": {"log": ["d"], "total": 10},
            "e": {"log": ["e"]},
        },
    )

    end = await fake.make().run(app.topology.pass_plan(["a", "d"]), 1, {"log": []}, 0)

    # b sees a's write but not d's, though d (an unrelated branch) may have finished.
    assert fake.seen["b"] == {"log": ["a"], "x": "a"}
    assert fake.seen["d"] == {"log": []}
    # e's ancestors are all of them: level 1 (a, d), then b, then c.
    assert fake.seen["e"]["log"] == ["a", "d", "b", "c"]
    assert end.values["log"] == ["a", "d", "b", "c", "e"]
    assert end.values["total"] == 11
    assert end.stopped_at is None
    assert fake.step == 4  # e started at level 4
    assert fake.errors == []


async def test_a_failure_at_level_l_keeps_the_writes_below_l_and_starts_nothing_from_l_on() -> None:
    app = branches()
    fake = FakeRun(app, {"a": {"log": ["a"]}, "d": {"log": ["d"]}}, fail={"b"})

    end = await fake.make(fail_fast=True).run(app.topology.pass_plan(["a", "d"]), 1, {}, 0)

    assert end.stopped_at == 2
    assert end.values["log"] == ["a", "d"]
    started = [name for name, _ in fake.started]
    assert "c" not in started
    assert "e" not in started
    assert [str(e) for e in fake.errors] == ["b"]


async def test_two_writes_to_one_replace_key_at_one_level_stop_the_pass_naming_both() -> None:
    app = branches()
    fake = FakeRun(app, {"a": {"x": "from a"}, "d": {"x": "from d"}})

    end = await fake.make().run(app.topology.pass_plan(["a", "d"]), 1, {}, 0)

    assert end.stopped_at == 1
    assert "x" not in end.values
    [error] = fake.errors
    assert isinstance(error, InvalidUpdateError)
    assert error.nodes == ("a", "d")  # declaration order, whichever finished first


async def test_a_node_above_the_recursion_limit_is_not_started_and_the_error_is_recorded_once() -> (
    None
):
    app = branches()
    fake = FakeRun(app, {"a": {"log": ["a"]}}, recursion_limit=2)

    end = await fake.make().run(app.topology.pass_plan(["a", "d"]), 1, {}, 0)

    assert end.stopped_at == 3
    assert ("c", 3) not in fake.started
    assert [type(e) for e in fake.errors] == [GraphRecursionError]
    assert end.values["log"] == ["a"]
