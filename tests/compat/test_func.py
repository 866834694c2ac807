"""The functional API: ``@entrypoint`` workflows and the ``@task`` calls they make."""

from __future__ import annotations

import asyncio
import functools
from typing import Any, TypedDict

import pytest
import typing_extensions

from flowcore.compat.langgraph import (
    END,
    START,
    Command,
    EntrypointGraph,
    InMemorySaver,
    NodeTimeoutError,
    RetryPolicy,
    StateGraph,
    TimeoutPolicy,
    entrypoint,
    interrupt,
    task,
)


def _thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_entrypoint_returns_the_function_result_and_streams_task_updates() -> None:
    @task
    def double(n: int) -> int:
        return 2 * n

    @entrypoint()
    def workflow(n: int) -> list[int]:
        futures = [double(i) for i in range(n)]
        return [f.result() for f in futures]

    assert isinstance(workflow, EntrypointGraph)
    assert workflow.invoke(3) == [0, 2, 4]
    chunks = list(workflow.stream(2))
    assert chunks == [{"double": 0}, {"double": 2}, {"workflow": [0, 2]}]


async def test_async_tasks_are_awaited_and_run_together() -> None:
    running = 0
    most = 0

    @task
    async def slow(n: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        return n + 1

    @entrypoint()
    async def workflow(n: int) -> int:
        results = await asyncio.gather(*(slow(i) for i in range(n)))
        return sum(results)

    assert await workflow.ainvoke(4) == 10
    assert most == 4


def test_finished_tasks_are_not_run_again_when_the_entrypoint_resumes() -> None:
    runs: list[int] = []

    @task
    def fetch(n: int) -> int:
        runs.append(n)
        return n * 10

    @entrypoint(checkpointer=InMemorySaver())
    def workflow(n: int) -> dict[str, Any]:
        value = fetch(n).result()
        answer = interrupt({"value": value})
        return {"value": value, "answer": answer}

    config = _thread("resume")
    paused = workflow.invoke(2, config)
    assert [i.value for i in paused["__interrupt__"]] == [{"value": 20}]
    assert workflow.invoke(Command(resume="yes"), config) == {"value": 20, "answer": "yes"}
    assert runs == [2]
    assert workflow.get_state(config).values == {"value": 20, "answer": "yes"}


def test_an_interrupt_inside_a_task_is_answered_to_that_task() -> None:
    @task
    def ask(question: str) -> Any:
        return interrupt(question)

    @entrypoint(checkpointer=InMemorySaver())
    def workflow(_: Any) -> list[Any]:
        return [ask("first?").result(), ask("second?").result()]

    config = _thread("ask")
    assert [i.value for i in workflow.invoke("go", config)["__interrupt__"]] == ["first?"]
    assert [i.value for i in workflow.invoke(Command(resume=1), config)["__interrupt__"]] == [
        "second?"
    ]
    assert workflow.invoke(Command(resume=2), config) == [1, 2]


def test_previous_and_final_carry_a_value_to_the_next_run() -> None:
    @entrypoint(checkpointer=InMemorySaver())
    def counter(n: int, *, previous: Any = None) -> Any:
        total = (previous or 0) + n
        return entrypoint.final(value=previous, save=total)

    config = _thread("count")
    assert counter.invoke(3, config) is None
    assert counter.invoke(4, config) == 3
    assert counter.invoke(1, config) == 7


def test_update_state_stores_a_value_as_the_entrypoint_result() -> None:
    @entrypoint(checkpointer=InMemorySaver())
    def echo(value: Any, *, previous: Any = None) -> Any:
        return [previous, value]

    config = _thread("update")
    echo.invoke("a", config)
    echo.update_state(config, "edited")
    assert echo.get_state(config).values == "edited"
    assert echo.invoke("b", config) == ["edited", "b"]


def test_tasks_retry_under_their_policy() -> None:
    attempts = 0

    @task(
        retry_policy=RetryPolicy(
            max_attempts=3, initial_interval=0.0, jitter=False, retry_on=ValueError
        )
    )
    def flaky() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ValueError("not yet")
        return "ok"

    @entrypoint()
    def workflow(_: Any) -> str:
        result: str = flaky().result()
        return result

    assert workflow.invoke(1) == "ok"
    assert attempts == 3


def test_a_task_failure_fails_the_run() -> None:
    @task
    def broken() -> None:
        raise KeyError("missing")

    @entrypoint()
    def workflow(_: Any) -> Any:
        return broken().result()

    with pytest.raises(KeyError, match="missing"):
        workflow.invoke(1)


def test_a_state_graph_node_may_call_tasks() -> None:
    class State(TypedDict):
        n: int

    @task
    def square(n: int) -> int:
        return n * n

    def node(state: State) -> State:
        return {"n": square(state["n"]).result()}

    builder: StateGraph[State] = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    assert builder.compile().invoke({"n": 5}) == {"n": 25}


def test_bad_use_gets_a_clear_error() -> None:
    @task
    def alone() -> int:
        return 1

    with pytest.raises(RuntimeError, match="outside a running graph"):
        alone()
    with pytest.raises(ValueError, match="at least one parameter"):
        entrypoint()(lambda: None)
    with pytest.raises(TypeError, match="unexpected arguments"):
        entrypoint(bogus=True)


async def test_cancelling_a_task_future_stops_that_call() -> None:
    stopped: list[int] = []

    @task
    async def wait(n: int) -> int:
        try:
            await asyncio.sleep(5 if n else 0)
        except asyncio.CancelledError:
            stopped.append(n)
            raise
        return n

    @entrypoint()
    async def workflow(_: Any) -> list[int]:
        futures = [wait(0), wait(1)]
        await asyncio.sleep(0.01)
        futures.pop().cancel()
        return list(await asyncio.gather(*futures))

    assert await workflow.ainvoke(1) == [0]
    assert stopped == [1]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_paused_task_call_shows_in_the_snapshot_until_answered(durability: str) -> None:
    runs: list[str] = []

    @task
    def ask(name: str) -> Any:
        runs.append(name)
        return interrupt(name)

    @entrypoint(checkpointer=InMemorySaver())
    def workflow(_: Any) -> list[Any]:
        first, second = ask("a"), ask("b")
        return [first.result(), second.result()]

    config = _thread(f"snapshot-{durability}")
    workflow.invoke(1, config, durability=durability)
    asked = {i.value: i.id for i in workflow.get_state(config).interrupts}
    assert sorted(asked) == ["a", "b"]
    workflow.invoke(Command(resume={asked["a"]: "x"}), config, durability=durability)
    left = workflow.get_state(config).interrupts
    assert [i.value for i in left] == ["b"]
    assert workflow.invoke(Command(resume={left[0].id: "y"}), config, durability=durability) == [
        "x",
        "y",
    ]
    assert sorted(runs) == ["a", "a", "b", "b", "b"]


def test_entrypoint_schemas_come_from_its_annotations() -> None:
    class Context(typing_extensions.TypedDict):
        model: str

    @entrypoint(context_schema=Context)
    def typed(items: list[int], *, previous: Any = None) -> entrypoint.final[str, int]:
        return entrypoint.final(value=str(items), save=len(items))

    assert typed.get_input_jsonschema() == {
        "type": "array",
        "items": {"type": "integer"},
        "title": "LangGraphInput",
    }
    assert typed.get_output_jsonschema() == {"type": "string", "title": "LangGraphOutput"}
    context = typed.get_context_jsonschema()
    assert context is not None
    assert context["title"] == "Context"
    with pytest.raises(TypeError):

        @entrypoint()
        def wrong(x: int) -> entrypoint.final[int]:  # type: ignore[type-arg]
            return entrypoint.final(value=x, save=x)


async def test_a_task_timeout_caps_each_attempt() -> None:
    @task(timeout=0.01)
    async def slow() -> None:
        await asyncio.sleep(5)

    @entrypoint()
    async def workflow(_: Any) -> None:
        await slow()

    with pytest.raises(NodeTimeoutError) as caught:
        await workflow.ainvoke(1)
    assert (caught.value.node, caught.value.run_timeout) == ("slow", 0.01)
    with pytest.raises(ValueError, match="needs an async task"):
        task(timeout=1)(lambda: None)


def test_a_task_is_named_after_its_function_unless_named() -> None:
    def join(sep: str, value: str) -> str:
        return value + sep

    class Shout:
        def __call__(self, value: str) -> str:
            return value.upper()

    assert task(functools.partial(join, "|")).name == "join"
    assert task(Shout()).name == "Shout"
    assert task(Shout(), name="loud").name == "loud"


async def test_an_entrypoint_timeout_caps_each_attempt() -> None:
    @entrypoint(timeout=TimeoutPolicy(idle_timeout=0.05))
    async def workflow(_: Any) -> None:
        await asyncio.sleep(5)

    with pytest.raises(NodeTimeoutError) as caught:
        await workflow.ainvoke(1)
    assert caught.value.kind == "idle"


def test_functional_timeouts_are_checked_where_declared() -> None:
    with pytest.raises(ValueError, match="greater than 0"):
        entrypoint(timeout=0)
    with pytest.raises(ValueError, match="greater than 0"):
        task(timeout=0)
    with pytest.raises(ValueError, match="only supported for async nodes"):
        entrypoint(timeout=1)(lambda x: x)
