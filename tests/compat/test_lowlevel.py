"""Spec: low-level ``Pregel`` graphs (channels + ``NodeBuilder`` nodes) on the compat runtime."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from flowcore.compat.langgraph import (
    START,
    BinaryOperatorAggregate,
    ChannelWriteEntry,
    Command,
    EphemeralValue,
    GraphRecursionError,
    InMemorySaver,
    InvalidUpdateError,
    LastValue,
    NodeBuilder,
    Pregel,
    RetryPolicy,
    StateGraph,
    Topic,
    UntrackedValue,
    interrupt,
)
from flowcore.compat.langgraph._loop import Run


def inc(x: int) -> int:
    return x + 1


def chain(**options: Any) -> Pregel:
    one = NodeBuilder().subscribe_only("input").do(inc).write_to("inbox")
    two = NodeBuilder().subscribe_only("inbox").do(inc).write_to("output")
    return Pregel(
        nodes={"one": one, "two": two},
        channels={"input": LastValue(int), "inbox": LastValue(int), "output": LastValue(int)},
        input_channels="input",
        output_channels="output",
        **options,
    )


def test_a_pregel_graph_runs_on_the_compat_run_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[Run] = []
    execute = Run.execute

    async def counted(self: Run) -> None:
        runs.append(self)
        await execute(self)

    monkeypatch.setattr(Run, "execute", counted)
    assert chain().invoke(2) == 4
    assert len(runs) == 1


def test_a_single_output_channel_gives_its_value_and_a_list_gives_a_dict() -> None:
    app = chain()
    assert app.invoke(2) == 4
    assert app.invoke(2, output_keys=["output", "inbox"]) == {"output": 4, "inbox": 3}
    assert app.input_schema.model_json_schema() == {"title": "LangGraphInput", "type": "integer"}


def test_each_superstep_counts_against_the_recursion_limit() -> None:
    with pytest.raises(GraphRecursionError):
        chain().invoke(2, {"recursion_limit": 1})


def test_write_to_takes_fixed_values_and_mappers() -> None:
    node = (
        NodeBuilder()
        .subscribe_only("input")
        .do(inc)
        .write_to("output", fixed=5, doubled=lambda x: x * 2)
        .write_to(ChannelWriteEntry("maybe", value=None, skip_none=True))
    )
    names = ("input", "output", "fixed", "doubled", "maybe")
    app = Pregel(
        nodes={"one": node},
        channels={n: LastValue(int) for n in names},
        input_channels="input",
        output_channels=["output", "fixed", "doubled", "maybe"],
    )
    assert app.invoke(2) == {"output": 3, "fixed": 5, "doubled": 6}


def test_a_topic_joins_the_writes_of_one_superstep_and_steps_run_in_sequence() -> None:
    def add_ten_each(values: list[int]) -> list[int]:
        return sorted(v + 10 for v in values)

    app = Pregel(
        nodes={
            "a": NodeBuilder().subscribe_only("input").do(inc).write_to("inbox"),
            "b": NodeBuilder().subscribe_only("input").do(inc).write_to("inbox"),
            "c": NodeBuilder().subscribe_only("inbox").do(add_ten_each).do(sum).write_to("output"),
        },
        channels={"input": LastValue(int), "inbox": Topic(int), "output": LastValue(int)},
        input_channels="input",
        output_channels="output",
    )
    assert app.invoke(2) == 26


def test_subscribe_to_reads_a_dict_and_read_from_adds_channels_without_waking() -> None:
    node = (
        NodeBuilder()
        .subscribe_to("input")
        .read_from("total")
        .do(lambda d: d["input"] + d["total"])
        .write_to("output", "total")
    )
    saver = InMemorySaver()
    app = Pregel(
        nodes={"add": node},
        channels={
            "input": LastValue(int),
            "total": BinaryOperatorAggregate(int, operator.add),
            "output": LastValue(int),
        },
        input_channels="input",
        output_channels="output",
        checkpointer=saver,
    )
    thread = {"configurable": {"thread_id": "t"}}
    assert app.invoke(2, thread) == 2
    assert app.invoke(3, thread) == 5
    state = app.get_state(thread)
    assert state.values == {"input": 3, "total": 7, "output": 5}
    assert state.next == ()
    sources = [s.metadata["source"] for s in app.get_state_history(thread)]
    assert sources == ["loop", "input", "loop", "input"]


def test_update_state_writes_through_the_nodes_writers() -> None:
    app = chain()
    app.checkpointer = InMemorySaver()
    thread = {"configurable": {"thread_id": "t"}}
    app.invoke(2, thread)
    config = app.update_state(thread, 10, as_node="two")
    assert app.get_state(config).values["output"] == 10
    assert app.get_state(thread).metadata["source"] == "update"


def test_stream_values_shows_every_channel_unless_stream_channels_are_given() -> None:
    assert list(chain().stream(2)) == [
        {"input": 2},
        {"input": 2, "inbox": 3},
        {"input": 2, "inbox": 3, "output": 4},
    ]
    assert list(chain(stream_channels=["output"]).stream(2)) == [{"output": 4}]
    assert list(chain(stream_channels="output").stream(2)) == [4]
    assert list(chain().stream(2, stream_mode="updates")) == [
        {"one": {"inbox": 3}},
        {"two": {"output": 4}},
    ]
    assert list(chain(stream_channels="output").stream(2, stream_mode="updates")) == [
        {"one": None},
        {"two": 4},
    ]


def test_an_ephemeral_channel_lasts_one_superstep() -> None:
    app = Pregel(
        nodes={
            "a": NodeBuilder().subscribe_only("input").write_to("flash"),
            "b": NodeBuilder().subscribe_only("flash").do(inc).write_to("output"),
        },
        channels={"input": LastValue(int), "flash": EphemeralValue(int), "output": LastValue(int)},
        input_channels="input",
        output_channels=["flash", "output"],
    )
    assert app.invoke(1) == {"output": 2}


def test_batch_map_and_a_retry_policy() -> None:
    inner = chain()
    fails = {"left": 1}

    def flaky(values: list[int]) -> int:
        if fails["left"]:
            fails["left"] -= 1
            raise ConnectionError("try again")
        return sum(values)

    outer = Pregel(
        nodes={
            "fan": NodeBuilder().subscribe_only("input").do(inner.map()).write_to("mapped"),
            "sum": NodeBuilder()
            .subscribe_only("mapped")
            .do(flaky)
            .add_retry_policies(RetryPolicy(initial_interval=0.0, jitter=False))
            .write_to("output"),
        },
        channels={"input": LastValue(list), "mapped": LastValue(list), "output": LastValue(int)},
        input_channels="input",
        output_channels="output",
    )
    assert outer.invoke([1, 2]) == 7
    assert chain().batch([1, 5]) == [3, 7]


def test_bad_graphs_are_refused_with_what_is_wrong() -> None:
    node = NodeBuilder().subscribe_only("between").do(inc)
    with pytest.raises(ValueError, match="between"):
        Pregel(nodes={"one": node}, channels={}, input_channels="between", output_channels=[])
    with pytest.raises(ValueError, match="not subscribed"):
        Pregel(
            nodes={"one": node},
            channels={"between": LastValue(int), "x": LastValue(int)},
            input_channels="x",
            output_channels="between",
        )
    with pytest.raises(ValueError, match="single channel"):
        NodeBuilder().subscribe_only("a").subscribe_to("b")
    with pytest.raises(InvalidUpdateError):
        Pregel(
            nodes={
                "a": NodeBuilder().subscribe_only("input").write_to("output"),
                "b": NodeBuilder().subscribe_only("input").write_to("output"),
            },
            channels={"input": LastValue(int), "output": LastValue(int)},
            input_channels="input",
            output_channels="output",
        ).invoke(1)


def test_a_state_graph_key_may_name_its_channel_class() -> None:
    class State(TypedDict):
        n: int
        scratch: Annotated[str, UntrackedValue]

    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"n": state["n"] + 1, "scratch": "kept out of checkpoints"}

    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    app = graph.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    assert app.invoke({"n": 1}, thread) == {"n": 2, "scratch": "kept out of checkpoints"}
    assert app.get_state(thread).values == {"n": 2}


def test_a_node_can_pause_with_interrupt_and_resume_with_command() -> None:
    def ask(x: str) -> str:
        answer = interrupt(f"ok {x}?")
        return f"{x}:{answer}"

    app = Pregel(
        nodes={"ask": NodeBuilder().subscribe_only("input").do(ask).write_to("output")},
        channels={"input": LastValue(str), "output": LastValue(str)},
        input_channels="input",
        output_channels="output",
        checkpointer=InMemorySaver(),
    )
    thread = {"configurable": {"thread_id": "t"}}
    paused = app.invoke("a", thread)
    assert [i.value for i in paused["__interrupt__"]] == ["ok a?"]
    assert app.get_state(thread).next == ("ask",)
    assert app.invoke(Command(resume="yes"), thread) == "a:yes"
