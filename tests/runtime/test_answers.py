"""Spec: which answer each interrupt() call of a task gets (flowcore.runtime.answers).

Both kinds of graph ask through Answers; the graph-level behaviour is specified
in tests/graph (native interrupts) and tests/compat, tests/conformance (LangGraph's).
"""

from __future__ import annotations

from flowcore.compat.langgraph._context import TaskScope
from flowcore.interrupts import InterruptScope
from flowcore.runtime.answers import UNANSWERED, Answers


def test_the_nth_call_gets_the_nth_answer_then_pauses() -> None:
    answers = Answers(["first", "second"])

    assert answers.ask() == (0, "first")
    assert answers.ask() == (1, "second")
    assert answers.ask() == (2, UNANSWERED)


def test_none_is_an_answer_not_a_missing_one() -> None:
    answers = Answers([None])

    assert answers.ask() == (0, None)
    assert answers.ask()[1] is UNANSWERED


def test_a_new_attempt_asks_again_from_the_first_call() -> None:
    answers = Answers(["yes"])
    answers.ask()
    answers.ask()

    answers.restart()

    assert answers.ask() == (0, "yes")


def test_an_unaddressed_answer_goes_to_the_first_call_without_one_and_becomes_the_tasks() -> None:
    shared = ["for whoever asks"]
    mine = Answers(["own"], shared)
    other = Answers([], shared)

    assert mine.ask() == (0, "own")  # has its own answer: the shared one stays
    assert shared == ["for whoever asks"]
    assert mine.ask() == (1, "for whoever asks")
    assert other.ask() == (0, UNANSWERED)  # taken by the first to ask
    assert mine.given == ["own", "for whoever asks"]  # saved with the task's answers

    mine.restart()
    assert [mine.ask()[1], mine.ask()[1]] == ["own", "for whoever asks"]


def test_a_pause_keeps_its_index_so_its_id_is_stable_across_resumes() -> None:
    before = InterruptScope("approve", "ckpt-1")
    index, answer = before.ask()
    assert answer is UNANSWERED
    first_id = before.next_id(index)

    after = InterruptScope("approve", "ckpt-1", ("yes",))
    assert after.ask() == (0, "yes")
    index, answer = after.ask()
    assert answer is UNANSWERED
    assert after.next_id(index) != first_id  # the second question is a new pause
    assert InterruptScope("approve", "ckpt-1").next_id(0) == first_id


def test_both_graph_kinds_scopes_follow_the_same_rule() -> None:
    class Host:
        def scope_config(self, task: object, step: int) -> dict[str, object]:
            return {}

        def write_custom(self, node: str, chunk: object) -> None:
            pass

    shared = ["late"]
    compat = TaskScope(Host(), object(), 0, ["a"], shared)
    native = InterruptScope("n", "k", ("a",))

    assert compat.ask() == native.ask() == (0, "a")
    assert compat.ask() == (1, "late")
    assert native.ask() == (1, UNANSWERED)
    assert compat.resume == ["a", "late"]
