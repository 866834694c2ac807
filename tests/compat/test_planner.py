"""Spec: the LangGraph planner decides without running anything.

``plan_tasks`` (what becomes a task, and when), ``fold_writes`` (how a
superstep's writes reach the channels) and ``should_interrupt`` (whether to
pause) are pure functions of a compiled ``StateGraph``, its channels and a
checkpoint dict, so they are tested here step by step with no run loop: each
spec plays the loop's part by hand, giving each task the writes its node
would have returned.
"""

from __future__ import annotations

import operator
import random
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    END,
    START,
    GraphRecursionError,
    InvalidUpdateError,
    IsLastStep,
    RemainingSteps,
    Send,
    StateGraph,
)
from flowcore.compat.langgraph._loop_helpers import empty_checkpoint
from flowcore.compat.langgraph._node import TASKS, branch_channel
from flowcore.compat.langgraph._planner import (
    INTERRUPT,
    PULL,
    PUSH,
    Task,
    fold_writes,
    plan_tasks,
    should_interrupt,
)


class State(TypedDict, total=False):
    n: int
    log: Annotated[list[Any], operator.add]


class Clock:
    """What a run tells the planner: the newest checkpoint id it made."""

    def __init__(self, last: str | None = None) -> None:
        self.last_checkpoint_id = last


class Steps:
    """The loop's bookkeeping between supersteps, kept by hand."""

    def __init__(self, graph: StateGraph, *, stop: int = 25) -> None:
        self.graph = graph.compile()
        self.channels = self.graph.new_channels()
        self.checkpoint = empty_checkpoint()
        self.clock = Clock(self.checkpoint["id"])
        self.live: set[str] = set()
        self.top: Any = None
        self.changed: set[str] | None = None
        self.updated: set[str] = set()
        self.step = -1
        self.stop = stop

    def plan(self, *, every_node: bool = False, ns: str = "") -> list[Task]:
        """The next superstep's tasks, as the loop asks for them (or looking at every node)."""
        return plan_tasks(
            self.graph,
            self.channels,
            self.checkpoint,
            self.clock,
            ns,
            self.step,
            self.stop,
            None if every_node else self.changed,
        )

    def fold(self, tasks: list[Task], extra: list[tuple[str, Any]] | None = None) -> None:
        self.updated, self.changed, self.top = fold_writes(
            self.graph, self.channels, self.checkpoint, tasks, extra or [], self.live, self.top
        )
        self.step += 1

    def give(self, value: dict[str, Any]) -> None:
        """The run's input, as the loop folds it before the first superstep."""
        self.fold([], [(START, value)])

    def done(self, task: Task, update: dict[str, Any] | None = None, *sends: Send) -> Task:
        """``task`` returned ``update`` (START returns the input) and its router ``sends``."""
        if update is None and task.name == START:
            update = dict(task.input)
        task.writes = [
            *(update or {}).items(),
            *((TASKS, send) for send in sends),
            *self.graph.static_writes[task.name],
        ]
        return task

    def value(self, key: str) -> Any:
        return self.channels[key].get()


def names(tasks: list[Task]) -> list[str]:
    return [t.name for t in tasks]


def noop(state: State) -> dict[str, Any]:
    return {}


def chain(*nodes: str) -> StateGraph:
    graph = StateGraph(State)
    for name in nodes:
        graph.add_node(name, noop)
    for a, b in zip([START, *nodes], [*nodes, END], strict=True):
        graph.add_edge(a, b)
    return graph


def test_before_any_input_nothing_is_due_and_the_input_makes_only_start_due() -> None:
    s = Steps(chain("a"))
    assert s.plan() == []

    s.give({"n": 1})
    (start,) = s.plan()

    assert (start.name, start.path, start.triggers) == (START, (PULL, START), (START,))
    assert start.input == {"n": 1}


def test_a_node_is_due_once_for_each_new_version_of_a_trigger() -> None:
    s = Steps(chain("a", "b"))
    s.give({"n": 1})
    (start,) = s.plan()
    s.fold([s.done(start)])

    (a,) = s.plan()
    assert (a.name, a.triggers) == ("a", (branch_channel("a"),))
    # Asking again changes nothing: planning is a pure read.
    assert names(s.plan()) == ["a"]
    s.fold([s.done(a, {"n": 2})])

    (b,) = s.plan()
    assert b.name == "b"
    assert b.input["n"] == 2
    s.fold([s.done(b)])

    # b's edge leads to END: no trigger holds a version newer than its node has seen.
    assert s.plan() == []
    assert s.value("n") == 2


def test_a_node_joined_by_two_sources_waits_for_both() -> None:
    graph = StateGraph(State)
    for name in "abc":
        graph.add_node(name, noop)
    graph.add_edge(START, "a").add_edge("a", "b").add_edge(["a", "b"], "c")
    s = Steps(graph)
    s.give({})
    (start,) = s.plan()
    s.fold([s.done(start)])
    (a,) = s.plan()
    s.fold([s.done(a)])

    assert names(s.plan()) == ["b"]
    (b,) = s.plan()
    s.fold([s.done(b)])

    assert names(s.plan()) == ["c"]


def test_send_tasks_come_first_in_the_order_sent_then_the_pull_tasks() -> None:
    graph = StateGraph(State)
    graph.add_node("a", noop).add_node("worker", noop)
    graph.add_edge(START, "a").add_edge("a", END).add_edge("worker", END)
    s = Steps(graph)
    s.give({})
    (start,) = s.plan()
    s.fold([s.done(start, None, Send("worker", {"n": 7}), Send("worker", {"n": 3}))])

    tasks = s.plan()

    assert [(t.name, t.path) for t in tasks] == [
        ("worker", (PUSH, 0)),
        ("worker", (PUSH, 1)),
        ("a", (PULL, "a")),
    ]
    # A Send task gets its own argument, not the state.
    assert [t.input for t in tasks[:2]] == [{"n": 7}, {"n": 3}]
    assert tasks[0].triggers == (PUSH,)
    # The sends are consumed by the superstep that ran them.
    s.fold([s.done(t) for t in tasks])
    assert s.plan() == []


def test_a_send_to_a_node_the_graph_lacks_is_refused() -> None:
    s = Steps(chain("a"))
    s.give({})
    (start,) = s.plan()
    s.fold([s.done(start, None, Send("nowhere", 1))])

    with pytest.raises(InvalidUpdateError, match="Invalid node name nowhere in Send"):
        s.plan()


def test_task_ids_depend_only_on_checkpoint_namespace_step_node_and_path() -> None:
    s = Steps(chain("a"))
    s.give({})
    first = s.plan()[0].id

    assert s.plan()[0].id == first
    assert len(first) == 36
    assert first.count("-") == 4
    assert s.plan(ns="outer:1")[0].id != first
    s.checkpoint["id"] = "another-checkpoint"
    assert s.plan()[0].id != first
    s.checkpoint["id"], s.step = s.clock.last_checkpoint_id, s.step + 1
    assert s.plan()[0].id != first


def test_a_checkpoint_not_yet_named_gets_its_id_when_a_task_id_is_first_read() -> None:
    s = Steps(chain("a"))
    s.give({})
    (start,) = s.plan()
    s.fold([s.done(start)])
    previous = s.clock.last_checkpoint_id
    assert previous is not None
    s.checkpoint["id"] = None

    (a,) = s.plan()
    assert s.checkpoint["id"] is None
    task_id = a.id

    named = s.checkpoint["id"]
    assert named is not None
    assert named > previous
    assert s.clock.last_checkpoint_id == named
    # Every task planned from that checkpoint reads the same id.
    assert s.plan()[0].id == task_id


def test_writes_apply_in_task_path_order_whatever_order_the_tasks_finished_in() -> None:
    graph = StateGraph(State)
    for name in ("zeta", "alpha", "mid", "worker"):
        graph.add_node(name, noop).add_edge(name, END)
        if name != "worker":
            graph.add_edge(START, name)
    s = Steps(graph)
    s.give({})
    (start,) = s.plan()
    s.fold([s.done(start, None, *(Send("worker", i) for i in range(12)))])
    tasks = s.plan()
    for task in tasks:
        s.done(task, {"log": [task.input if task.name == "worker" else task.name]})
    finished = list(tasks)
    random.Random(5).shuffle(finished)

    s.fold(finished)

    # Pull tasks by node name, then Send tasks by number (10 and 11 after 9).
    assert s.value("log") == ["alpha", "mid", "zeta", *range(12)]


def test_a_plain_key_takes_one_value_per_superstep_and_a_reducer_takes_them_all() -> None:
    graph = StateGraph(State)
    for name in "ab":
        graph.add_node(name, noop).add_edge(START, name)
    s = Steps(graph)
    s.give({"log": ["in"]})
    (start,) = s.plan()
    s.fold([s.done(start)])
    a, b = s.plan()

    s.fold([s.done(a, {"log": ["a"]}), s.done(b, {"log": ["b"]})])
    assert s.value("log") == ["in", "a", "b"]

    with pytest.raises(InvalidUpdateError, match="Can receive only one value per step"):
        s.fold([s.done(a, {"n": 1}), s.done(b, {"n": 2})])


def test_a_fold_gives_everything_it_changed_one_new_version_and_marks_triggers_seen() -> None:
    s = Steps(chain("a"))
    s.give({"n": 1})
    assert s.top == 1
    (start,) = s.plan()
    s.fold([s.done(start)])
    assert s.top == 2

    (a,) = s.plan()
    trigger = branch_channel("a")
    before = s.checkpoint["channel_versions"][trigger]
    s.fold([s.done(a, {"n": 5})])

    versions = s.checkpoint["channel_versions"]
    assert s.top == 3
    assert s.changed == {"n", trigger}
    assert all(versions[c] == 3 for c in s.changed)
    assert s.updated == {"n"}
    assert s.checkpoint["versions_seen"]["a"] == {trigger: before}


def test_looking_only_at_the_nodes_of_changed_channels_finds_every_due_task() -> None:
    graph = StateGraph(State)
    for name in ("a", "b", "c", "d", "worker"):
        graph.add_node(name, noop)
    graph.add_edge(START, "a").add_edge(START, "b").add_edge("a", "c")
    graph.add_edge(["b", "c"], "d").add_edge("d", END).add_edge("worker", "d")
    s = Steps(graph)
    s.give({})
    seen: list[list[str]] = []
    while tasks := s.plan():
        assert [(t.name, t.path) for t in tasks] == [
            (t.name, t.path) for t in s.plan(every_node=True)
        ]
        seen.append(names(tasks))
        sends = [Send("worker", 1)] if tasks[0].name == START else []
        s.fold([s.done(t, None, *sends) for t in tasks])

    assert seen == [[START], ["worker", "a", "b"], ["c", "d"], ["d"]]


def test_a_fold_that_changes_nothing_keeps_the_top_version() -> None:
    s = Steps(chain("a"))
    s.give({"n": 1})

    s.fold([], [("not-a-channel", 1)])

    assert s.top == 1
    assert s.changed == set()
    assert s.updated == set()


def test_one_step_channels_are_cleared_by_the_next_superstep() -> None:
    s = Steps(chain("a", "b"))
    s.give({})
    assert s.live == {START}
    (start,) = s.plan()
    s.fold([s.done(start)])
    trigger = branch_channel("a")
    assert s.live == {trigger}
    assert s.channels[trigger].is_available()

    (a,) = s.plan()
    s.fold([s.done(a)])

    assert not s.channels[trigger].is_available()
    assert s.live == {branch_channel("b")}
    assert s.changed is not None
    assert trigger in s.changed


def test_a_deferred_node_is_due_only_when_nothing_else_is() -> None:
    graph = StateGraph(State)
    for name in "abc":
        graph.add_node(name, noop)
    graph.add_node("last", noop, defer=True)
    graph.add_edge(START, "a").add_edge("a", "last")
    graph.add_edge(START, "b").add_edge("b", "c").add_edge("c", END)
    s = Steps(graph)
    s.give({})
    (start,) = s.plan()
    s.fold([s.done(start)])
    assert names(s.plan()) == ["a", "b"]
    s.fold([s.done(t) for t in s.plan()])

    assert names(s.plan()) == ["c"]
    s.fold([s.done(t) for t in s.plan()])

    assert names(s.plan()) == ["last"]


def test_versions_written_by_langgraph_savers_count_on_from_their_counter() -> None:
    s = Steps(chain("a"))
    s.top = "00000000000000000000000000000007.0123456789"

    s.give({"n": 1})

    assert s.top == 8
    assert s.checkpoint["channel_versions"][START] == 8


def test_a_node_reads_the_steps_left_from_the_step_and_stop_it_is_planned_with() -> None:
    class Counted(TypedDict, total=False):
        n: int
        left: RemainingSteps
        last: IsLastStep

    graph = StateGraph(Counted)
    graph.add_node("a", lambda state: {}).add_edge(START, "a")
    s = Steps(graph, stop=10)
    s.give({"n": 1})
    (start,) = s.plan()
    s.fold([s.done(start)])

    s.step = 3
    assert s.plan()[0].input == {"n": 1, "left": 7, "last": False}
    s.step = 9
    assert s.plan()[0].input == {"n": 1, "left": 1, "last": True}
    no_input = plan_tasks(s.graph, s.channels, s.checkpoint, s.clock, "", 9, 10, None, False)
    assert no_input[0].input is None


def test_the_recursion_limit_counts_the_supersteps_of_a_run() -> None:
    runs: list[int] = []

    def a(state: State) -> dict[str, Any]:
        runs.append(1)
        return {}

    graph = StateGraph(State)
    graph.add_node("a", a)
    graph.add_edge(START, "a").add_edge("a", "a")

    with pytest.raises(GraphRecursionError):
        graph.compile().invoke({}, {"recursion_limit": 4})
    # LangGraph 1.2 runs the node four times too (the input is not a superstep).
    assert len(runs) == 4


def test_a_pause_is_due_at_a_named_node_only_once_per_change() -> None:
    s = Steps(chain("a"))
    s.give({})
    (start,) = s.plan()
    assert not should_interrupt(s.checkpoint, [start], ("a", START))
    s.fold([s.done(start)])
    tasks = s.plan()

    assert should_interrupt(s.checkpoint, tasks, ("a",))
    assert not should_interrupt(s.checkpoint, tasks, ("b",))
    # Resuming records the versions it saw under __interrupt__: no second pause there.
    s.checkpoint["versions_seen"][INTERRUPT] = dict(s.checkpoint["channel_versions"])
    assert not should_interrupt(s.checkpoint, tasks, ("a",))
