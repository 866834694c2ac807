"""State schemas and node options: input/output schemas, private channels, dataclass and
pydantic states, defer=True, async nodes, max_concurrency."""

import asyncio
import dataclasses
import operator
from typing import Annotated, Any, TypedDict

import pydantic

from ..harness import Recorder, scenario


class Overall(TypedDict, total=False):
    question: str
    answer: str
    notes: Annotated[list[str], operator.add]


class InputOnly(TypedDict):
    question: str


class OutputOnly(TypedDict):
    answer: str


@scenario(tags=["schema"])
def scenario_input_output_schema(lg: Any, rec: Recorder) -> None:
    """input_schema filters what goes in; output_schema filters what comes out."""
    seen: list[Any] = []

    def answer(state: Overall) -> dict[str, Any]:
        seen.append(sorted(state))
        return {"answer": f"re: {state['question']}", "notes": ["answered"]}

    builder = lg.StateGraph(Overall, input_schema=InputOnly, output_schema=OutputOnly)
    builder.add_node("answer", answer)
    builder.add_edge(lg.START, "answer")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"question": "why?"})
    rec.record("node saw keys", seen)
    rec.stream("values", graph, {"question": "how?"}, stream_mode=["values", "updates"])


@scenario(tags=["schema"])
def scenario_output_schema_with_checkpointer(lg: Any, rec: Recorder) -> None:
    """get_state shows every channel even when invoke's output is filtered."""

    def answer(state: Overall) -> dict[str, Any]:
        return {"answer": "yes", "notes": ["internal"]}

    builder = lg.StateGraph(Overall, output_schema=OutputOnly)
    builder.add_node("answer", answer)
    builder.add_edge(lg.START, "answer")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    rec.invoke("invoke", graph, {"question": "q"}, config)
    rec.state("state", graph, config)


@scenario(tags=["schema", "private"])
def scenario_private_channel(lg: Any, rec: Recorder) -> None:
    """A node may write a key declared only in the next node's input schema."""

    class Private(TypedDict):
        secret: str

    def hide(state: Overall) -> Any:
        return {"secret": f"secret about {state['question']}"}

    def reveal(state: Private) -> dict[str, Any]:
        return {"answer": state["secret"].upper()}

    builder = lg.StateGraph(Overall)
    builder.add_node("hide", hide)
    builder.add_node("reveal", reveal, input_schema=Private)
    builder.add_edge(lg.START, "hide")
    builder.add_edge("hide", "reveal")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"question": "cake"})
    rec.stream("updates", graph, {"question": "pie"}, stream_mode=["updates", "values"])


@scenario(tags=["schema", "dataclass"])
def scenario_dataclass_state(lg: Any, rec: Recorder) -> None:
    """A dataclass state: nodes get the dataclass, defaults fill missing input."""
    seen: list[str] = []

    @dataclasses.dataclass
    class State:
        topic: str
        count: int = 0
        log: Annotated[list[str], operator.add] = dataclasses.field(default_factory=list)

    def step(state: State) -> dict[str, Any]:
        seen.append(type(state).__name__)
        return {"count": state.count + 1, "log": [f"saw {state.topic}"]}

    builder = lg.StateGraph(State)
    builder.add_node("step", step)
    builder.add_node("again", step)
    builder.add_edge(lg.START, "step")
    builder.add_edge("step", "again")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"topic": "dc"})
    rec.invoke("from instance", graph, State(topic="inst", count=10))
    rec.record("node state type", seen)


@scenario(tags=["schema", "pydantic"])
def scenario_pydantic_state(lg: Any, rec: Recorder) -> None:
    """A pydantic state: nodes get the model, invoke returns a dict of its fields."""
    seen: list[str] = []

    class State(pydantic.BaseModel):
        topic: str
        count: int = 0
        log: Annotated[list[str], operator.add] = pydantic.Field(default_factory=list)

    def step(state: State) -> dict[str, Any]:
        seen.append(type(state).__name__)
        return {"count": state.count + 1, "log": [state.topic]}

    builder = lg.StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(lg.START, "step")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"topic": "pd"})
    rec.invoke("from model", graph, State(topic="m", count=4))
    rec.record("node state type", seen)


@scenario(tags=["schema", "pydantic", "error"])
def scenario_pydantic_state_validation(lg: Any, rec: Recorder) -> None:
    """Input that fails the pydantic state's validation raises ValidationError."""

    class State(pydantic.BaseModel):
        count: int

    def step(state: State) -> dict[str, Any]:
        return {"count": state.count + 1}

    builder = lg.StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(lg.START, "step")
    graph = builder.compile()
    rec.invoke("good", graph, {"count": 1})
    rec.invoke("bad", graph, {"count": "not a number"})


@scenario(tags=["defer"])
def scenario_defer_node(lg: Any, rec: Recorder) -> None:
    """defer=True: the node waits until no other work is left, then runs once."""
    calls: list[str] = []

    def node(name: str) -> Any:
        def run(state: Overall) -> dict[str, Any]:
            calls.append(name)
            return {"notes": [name]}

        return run

    builder = lg.StateGraph(Overall)
    for name in ["a", "short", "long1", "long2"]:
        builder.add_node(name, node(name))
    builder.add_node("final", node("final"), defer=True)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "short")
    builder.add_edge("a", "long1")
    builder.add_edge("long1", "long2")
    builder.add_edge("short", "final")
    builder.add_edge("long2", "final")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"notes": []})
    rec.record("final runs", calls.count("final"))
    rec.stream("updates", graph, {"notes": []}, stream_mode=["updates", "values"])


@scenario(tags=["async"])
async def scenario_async_nodes(lg: Any, rec: Recorder) -> None:
    """ainvoke with async nodes in parallel: same state as the sync engine would give."""

    def node(name: str, delay: float) -> Any:
        async def run(state: Overall) -> dict[str, Any]:
            await asyncio.sleep(delay)
            return {"notes": [name]}

        return run

    builder = lg.StateGraph(Overall)
    builder.add_node("slow", node("slow", 0.02))
    builder.add_node("fast", node("fast", 0.0))
    builder.add_node("after", node("after", 0.0))
    builder.add_edge(lg.START, "slow")
    builder.add_edge(lg.START, "fast")
    builder.add_edge(["slow", "fast"], "after")
    graph = builder.compile()
    await rec.ainvoke("ainvoke", graph, {"notes": []})


@scenario(tags=["async", "interrupt"])
async def scenario_async_interrupt_resume(lg: Any, rec: Recorder) -> None:
    """interrupt/resume through ainvoke and aget_state."""

    async def ask(state: Overall) -> dict[str, Any]:
        return {"answer": lg.interrupt(state["question"])}

    builder = lg.StateGraph(Overall)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await rec.ainvoke("first", graph, {"question": "color?"}, config)
    await rec.astate("paused", graph, config)
    await rec.ainvoke("resumed", graph, lg.Command(resume="blue"), config)


@scenario(tags=["async", "concurrency"])
async def scenario_max_concurrency(lg: Any, rec: Recorder) -> None:
    """max_concurrency in config caps how many nodes of a superstep run at once."""
    for limit in [1, 2, None]:
        running = [0]
        peak = [0]

        def node(name: str, running: list[int] = running, peak: list[int] = peak) -> Any:
            async def run(state: Overall) -> dict[str, Any]:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                await asyncio.sleep(0.01)
                running[0] -= 1
                return {"notes": [name]}

            return run

        builder = lg.StateGraph(Overall)
        for name in ["n1", "n2", "n3", "n4"]:
            builder.add_node(name, node(name))
            builder.add_edge(lg.START, name)
        graph = builder.compile()
        config = {} if limit is None else {"max_concurrency": limit}
        await rec.ainvoke(f"limit {limit}", graph, {"notes": []}, config)
        rec.record(f"peak at limit {limit}", peak[0])


@scenario(tags=["schema"])
def scenario_node_input_schema_subset(lg: Any, rec: Recorder) -> None:
    """A node with a narrower input_schema sees only those keys."""
    seen: list[Any] = []

    def narrow(state: InputOnly) -> dict[str, Any]:
        seen.append(sorted(state))
        return {"answer": "narrow"}

    builder = lg.StateGraph(Overall)
    builder.add_node("narrow", narrow, input_schema=InputOnly)
    builder.add_edge(lg.START, "narrow")
    rec.invoke("invoke", builder.compile(), {"question": "q", "notes": ["n"]})
    rec.record("seen", seen)


@scenario(tags=["schema", "pydantic"])
def scenario_pydantic_state_unvalidated_write(lg: Any, rec: Recorder) -> None:
    """A node writing a wrongly typed value into a pydantic state, and what follows."""

    class State(pydantic.BaseModel):
        count: int = 0
        label: str = ""

    def writer(state: State) -> dict[str, Any]:
        return {"count": "not an int"}

    def reader(state: State) -> dict[str, Any]:
        return {"label": f"count is {state.count!r}"}

    builder = lg.StateGraph(State)
    builder.add_node("writer", writer)
    builder.add_node("reader", reader)
    builder.add_edge(lg.START, "writer")
    builder.add_edge("writer", "reader")
    rec.invoke("invoke", builder.compile(), {"count": 1})
