"""Send: map-reduce fan-out, the order its writes are applied in, private inputs."""

import operator
from typing import Annotated, Any, TypedDict

from ..harness import Recorder, let_siblings_finish, scenario


class State(TypedDict, total=False):
    items: list[str]
    results: Annotated[list[str], operator.add]
    summary: str


class Item(TypedDict):
    item: str


def _map_reduce(lg: Any, calls: list[str] | None = None) -> Any:
    def fan_out(state: State) -> list[Any]:
        return [lg.Send("work", {"item": item}) for item in state["items"]]

    def work(arg: Item) -> dict[str, Any]:
        if calls is not None:
            calls.append(arg["item"])
        return {"results": [arg["item"].upper()]}

    def reduce(state: State) -> dict[str, Any]:
        return {"summary": ",".join(state["results"])}

    builder = lg.StateGraph(State)
    builder.add_node("work", work)
    builder.add_node("reduce", reduce)
    builder.add_conditional_edges(lg.START, fan_out, ["work"])
    builder.add_edge("work", "reduce")
    return builder.compile()


@scenario(tags=["send", "map-reduce"])
def scenario_send_map_reduce(lg: Any, rec: Recorder) -> None:
    """Send one item to each worker; the reducer node runs once after all of them."""
    calls: list[str] = []
    graph = _map_reduce(lg, calls)
    rec.invoke("invoke", graph, {"items": ["b", "c", "a"], "results": []})
    rec.record("worker calls", sorted(calls))


@scenario(tags=["send", "order"])
def scenario_send_fan_out_order(lg: Any, rec: Recorder) -> None:
    """Send writes are applied in Send order, whatever the items sort as."""
    graph = _map_reduce(lg)
    for items in [["zz", "aa", "mm"], ["3", "1", "2", "10", "11"]]:
        rec.invoke(f"items {items}", graph, {"items": items, "results": []})


@scenario(tags=["send", "order"])
def scenario_send_order_many(lg: Any, rec: Recorder) -> None:
    """Twelve Sends: results stay in Send order (task path order, not name order)."""
    graph = _map_reduce(lg)
    items = [f"i{n}" for n in range(12)]
    rec.invoke("invoke", graph, {"items": items, "results": []})


@scenario(tags=["send", "stream"])
def scenario_send_stream_updates(lg: Any, rec: Recorder) -> None:
    """The updates of the Send workers form one superstep."""
    graph = _map_reduce(lg)
    rec.stream(
        "stream",
        graph,
        {"items": ["x", "y", "z"], "results": []},
        stream_mode=["updates", "values"],
    )


@scenario(tags=["send"])
def scenario_send_empty(lg: Any, rec: Recorder) -> None:
    """No Sends: the workers and the reducer behind them never run."""
    graph = _map_reduce(lg)
    rec.invoke("invoke", graph, {"items": [], "results": []})


@scenario(tags=["send"])
def scenario_send_same_item_twice(lg: Any, rec: Recorder) -> None:
    """Two Sends with equal arguments are two tasks."""
    graph = _map_reduce(lg)
    rec.invoke("invoke", graph, {"items": ["dup", "dup"], "results": []})


@scenario(tags=["send"])
def scenario_send_with_static_targets(lg: Any, rec: Recorder) -> None:
    """A router returning Sends and a node name schedules both in one superstep."""

    def plan(state: State) -> dict[str, Any]:
        return {"summary": "planned"}

    def route(state: State) -> list[Any]:
        return ["audit", *[lg.Send("work", {"item": item}) for item in state["items"]]]

    def work(arg: Item) -> dict[str, Any]:
        return {"results": [arg["item"]]}

    def audit(state: State) -> dict[str, Any]:
        return {"results": [f"audit saw {len(state['results'])}"]}

    builder = lg.StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("work", work)
    builder.add_node("audit", audit)
    builder.add_edge(lg.START, "plan")
    builder.add_conditional_edges("plan", route, ["work", "audit"])
    rec.invoke("invoke", builder.compile(), {"items": ["p", "q"], "results": []})


@scenario(tags=["send"])
def scenario_send_from_node_to_different_schema(lg: Any, rec: Recorder) -> None:
    """A Send target gets only its argument, not the graph state."""
    seen: list[Any] = []

    def fan_out(state: State) -> list[Any]:
        return [lg.Send("inspect", {"item": item, "extra": 1}) for item in state["items"]]

    def inspect(arg: dict[str, Any]) -> dict[str, Any]:
        seen.append(sorted(arg))
        return {"results": [arg["item"]]}

    builder = lg.StateGraph(State)
    builder.add_node("inspect", inspect)
    builder.add_conditional_edges(lg.START, fan_out, ["inspect"])
    rec.invoke("invoke", builder.compile(), {"items": ["one"], "results": []})
    rec.record("seen keys", seen)


@scenario(tags=["send", "nested"])
def scenario_send_chain(lg: Any, rec: Recorder) -> None:
    """Send targets that send again: two levels of fan-out in order."""

    def fan_out(state: State) -> list[Any]:
        return [lg.Send("split", {"item": item}) for item in state["items"]]

    def split(arg: Item) -> Any:
        return lg.Command(
            update={"results": [f"split:{arg['item']}"]},
            goto=[lg.Send("leaf", {"item": f"{arg['item']}{n}"}) for n in (1, 2)],
        )

    def leaf(arg: Item) -> dict[str, Any]:
        return {"results": [f"leaf:{arg['item']}"]}

    builder = lg.StateGraph(State)
    builder.add_node("split", split, destinations=("leaf",))
    builder.add_node("leaf", leaf)
    builder.add_conditional_edges(lg.START, fan_out, ["split"])
    rec.invoke("invoke", builder.compile(), {"items": ["a", "b"], "results": []})


@scenario(tags=["send", "cycle"])
def scenario_send_loop_rounds(lg: Any, rec: Recorder) -> None:
    """A loop that fans out with Send each round until enough results are in."""

    def route(state: State) -> Any:
        if len(state["results"]) >= 5:
            return lg.END
        return [lg.Send("work", {"item": f"r{len(state['results'])}-{n}"}) for n in range(2)]

    def work(arg: Item) -> dict[str, Any]:
        return {"results": [arg["item"]]}

    def gather(state: State) -> dict[str, Any]:
        return {"summary": f"round with {len(state['results'])}"}

    builder = lg.StateGraph(State)
    builder.add_node("gather", gather)
    builder.add_node("work", work)
    builder.add_edge(lg.START, "gather")
    builder.add_conditional_edges("gather", route, ["work", lg.END])
    builder.add_edge("work", "gather")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"items": [], "results": []})
    rec.stream("updates", graph, {"items": [], "results": []}, stream_mode=["updates", "values"])


@scenario(tags=["send", "pending-writes", "async"])
async def scenario_send_worker_failure_resume(lg: Any, rec: Recorder) -> None:
    """One failing Send worker: on resume only it runs again, the others' writes stay."""
    calls: list[str] = []
    failing = ["b"]

    def fan_out(state: State) -> list[Any]:
        return [lg.Send("work", {"item": item}) for item in state["items"]]

    async def work(arg: Item) -> dict[str, Any]:
        calls.append(arg["item"])
        if arg["item"] in failing:
            await let_siblings_finish()
            failing.remove(arg["item"])
            raise KeyError(arg["item"])
        return {"results": [arg["item"]]}

    builder = lg.StateGraph(State)
    builder.add_node("work", work)
    builder.add_conditional_edges(lg.START, fan_out, ["work"])
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await rec.ainvoke("failing", graph, {"items": ["a", "b", "c"], "results": []}, config)
    await rec.astate("after failure", graph, config, tasks=True)
    await rec.ainvoke("resumed", graph, None, config)
    rec.record("calls", sorted(calls))


@scenario(tags=["send", "recursion"])
def scenario_send_recursion_limit(lg: Any, rec: Recorder) -> None:
    """Endless Send rounds end with GraphRecursionError; Send tasks share a superstep."""
    calls: list[str] = []

    def route(state: State) -> list[Any]:
        return [lg.Send("work", {"item": f"{len(state['results'])}-{n}"}) for n in range(2)]

    def work(arg: Item) -> dict[str, Any]:
        calls.append(arg["item"])
        return {"results": [arg["item"]]}

    builder = lg.StateGraph(State)
    builder.add_node("work", work)
    builder.add_conditional_edges(lg.START, route, ["work"])
    builder.add_conditional_edges("work", route, ["work"])
    graph = builder.compile()
    rec.invoke("limit 4", graph, {"items": [], "results": []}, {"recursion_limit": 4})
    rec.record("calls", len(calls))


@scenario(tags=["send", "conditional"])
def scenario_router_after_send_target(lg: Any, rec: Recorder) -> None:
    """A router behind a Send target reads the graph state with that task's own write,
    not the Send argument."""
    seen: list[Any] = []

    def fan_out(state: State) -> list[Any]:
        return [lg.Send("work", {"item": item}) for item in state["items"]]

    def work(arg: Item) -> dict[str, Any]:
        return {"results": [arg["item"]]}

    def after_work(state: Any) -> str:
        seen.append((sorted(state), list(state.get("results", []))))
        return lg.END

    builder = lg.StateGraph(State)
    builder.add_node("work", work)
    builder.add_conditional_edges(lg.START, fan_out, ["work"])
    builder.add_conditional_edges("work", after_work, [lg.END])
    rec.invoke("invoke", builder.compile(), {"items": ["a", "b"], "results": ["seed"]})
    rec.record("router saw", sorted(seen))
