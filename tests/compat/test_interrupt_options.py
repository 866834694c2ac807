"""``interrupt(..., response_schema=)``, ``is_invalid_resume`` and LangGraph's legacy interrupts."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel, ValidationError

from flowcore.compat.langgraph import (
    START,
    Command,
    InMemorySaver,
    Interrupt,
    StateGraph,
    interrupt,
    is_invalid_resume,
)


class Decision(BaseModel):
    approved: bool


class Answer(TypedDict):
    answer: Any


def _asking(schema: Any) -> Any:
    def node(state: Answer) -> Answer:
        return {"answer": interrupt("approve?", response_schema=schema)}

    builder: StateGraph[Answer] = StateGraph(Answer)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_model_schema_is_shown_as_json_schema_and_validates_the_answer() -> None:
    graph = _asking(Decision)
    config = {"configurable": {"thread_id": "model"}}

    paused = graph.invoke({"answer": None}, config)

    (pause,) = paused["__interrupt__"]
    assert pause.response_schema == Decision.model_json_schema()
    assert graph.get_state(config).tasks[0].interrupts == (pause,)
    assert graph.invoke(Command(resume={"approved": True}), config) == {
        "answer": Decision(approved=True)
    }


def test_a_dict_schema_is_only_shown() -> None:
    schema = {"type": "object"}
    graph = _asking(schema)
    config = {"configurable": {"thread_id": "dict"}}

    (pause,) = graph.invoke({"answer": None}, config)["__interrupt__"]

    assert pause.response_schema == schema
    assert graph.invoke(Command(resume="anything"), config) == {"answer": "anything"}


@pytest.mark.parametrize("by_id", [False, True])
def test_an_answer_that_does_not_fit_can_be_given_again(by_id: bool) -> None:
    graph = _asking(Decision)
    config = {"configurable": {"thread_id": f"again-{by_id}"}}
    (pause,) = graph.invoke({"answer": None}, config)["__interrupt__"]

    def resume(value: Any) -> Command[Any]:
        return Command(resume={pause.id: value} if by_id else value)

    with pytest.raises(ValidationError) as refused:
        graph.invoke(resume({"approved": "maybe"}), config)

    assert is_invalid_resume(refused.value)
    assert graph.get_state(config).interrupts == (pause,)
    assert graph.invoke(resume({"approved": False}), config) == {"answer": Decision(approved=False)}


def test_is_invalid_resume_is_false_for_other_errors() -> None:
    with pytest.raises(ValidationError) as other:
        Decision.model_validate({"approved": "maybe"})

    assert not is_invalid_resume(other.value)
    assert not is_invalid_resume(ValueError("no"))


def test_an_invalid_answer_lets_the_other_answered_tasks_finish() -> None:
    class Log(TypedDict):
        log: Annotated[list[str], operator.add]

    done: list[str] = []

    async def slow(state: Log) -> Log:
        interrupt("slow?", response_schema=Decision)
        await asyncio.sleep(0.01)
        done.append("slow")
        return {"log": ["slow"]}

    async def strict(state: Log) -> Log:
        interrupt("strict?", response_schema=Decision)
        return {"log": ["strict"]}

    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("slow", slow)
    builder.add_node("strict", strict)
    builder.add_edge(START, "slow")
    builder.add_edge(START, "strict")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "siblings"}}

    async def run() -> dict[str, Any]:
        await graph.ainvoke({"log": []}, config)
        ids = {i.value: i.id for i in (await graph.aget_state(config)).interrupts}
        with pytest.raises(ValidationError):
            await graph.ainvoke(
                Command(resume={ids["slow?"]: {"approved": 1}, ids["strict?"]: {"approved": []}}),
                config,
            )
        assert [i.value for i in (await graph.aget_state(config)).interrupts] == ["strict?"]
        return await graph.ainvoke(Command(resume={ids["strict?"]: {"approved": 0}}), config)

    result = asyncio.run(run())

    assert (sorted(result["log"]), done) == (["slow", "strict"], ["slow"])


def test_a_legacy_namespace_gives_langgraphs_id() -> None:
    legacy = Interrupt(value="legacy_test", resumable=True, ns=["legacy_test"], when="during")

    assert legacy.id == "f1fa625689ec006a5b32b76863e22a6c"
    assert Interrupt.from_ns("v", "a:b|c:d").id == Interrupt("v", ns=["a:b", "c:d"]).id
    assert Interrupt("v", id="given", ns=["x"]).id == "given"


def test_interrupt_ids_are_langgraphs_and_each_question_of_a_task_has_its_own() -> None:
    xxhash = pytest.importorskip("xxhash")

    class Log(TypedDict, total=False):
        log: Annotated[list[str], operator.add]

    def ask_twice(state: Log) -> Log:
        return {"log": [f"{interrupt('first?')},{interrupt('second?')}"]}

    builder: StateGraph[Log] = StateGraph(Log)
    builder.add_node("ask", ask_twice)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "ids"}}
    graph.invoke({"log": []}, config)
    state = graph.get_state(config)
    (first,) = state.interrupts
    task_ns = f"ask:{state.tasks[0].id}"

    graph.invoke(Command(resume={first.id: "1"}), config)
    (second,) = graph.get_state(config).interrupts

    assert first.id == xxhash.xxh3_128_hexdigest(task_ns.encode())
    assert second.id == xxhash.xxh3_128_hexdigest(f"{task_ns}|1".encode())
    assert graph.invoke(Command(resume={second.id: "2"}), config) == {"log": ["1,2"]}
