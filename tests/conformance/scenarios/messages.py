"""add_messages and MessagesState: append, replace by id, remove, coercion, tool calls."""

from typing import Annotated, Any, TypedDict

from ..harness import Recorder, scenario


def _chat_graph(lg: Any, reply: Any, state_schema: Any = None) -> Any:
    def bot(state: Any) -> dict[str, Any]:
        return {"messages": reply(state)}

    builder = lg.StateGraph(state_schema or lg.MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(lg.START, "bot")
    return builder.compile()


@scenario(tags=["messages"])
def scenario_messages_state_append(lg: Any, rec: Recorder) -> None:
    """MessagesState appends the node's messages; ids are given to messages without one."""
    graph = _chat_graph(lg, lambda state: [lg.AIMessage(content="hello back")])
    result = rec.invoke("invoke", graph, {"messages": [lg.HumanMessage(content="hello")]})
    rec.record("all have ids", all(m.id for m in result["messages"]))


@scenario(tags=["messages"])
def scenario_messages_replace_by_id(lg: Any, rec: Recorder) -> None:
    """A message with an existing id replaces that message in place."""
    graph = _chat_graph(lg, lambda state: [lg.AIMessage(content="v2", id="draft")])
    rec.invoke(
        "invoke",
        graph,
        {
            "messages": [
                lg.HumanMessage(content="q", id="q1"),
                lg.AIMessage(content="v1", id="draft"),
                lg.HumanMessage(content="more", id="q2"),
            ]
        },
    )


@scenario(tags=["messages"])
def scenario_messages_remove(lg: Any, rec: Recorder) -> None:
    """RemoveMessage(id=...) deletes a message; REMOVE_ALL_MESSAGES clears the list."""
    graph = _chat_graph(lg, lambda state: [lg.RemoveMessage(id="m2")])
    start = [
        lg.HumanMessage(content="one", id="m1"),
        lg.AIMessage(content="two", id="m2"),
        lg.HumanMessage(content="three", id="m3"),
    ]
    rec.invoke("remove one", graph, {"messages": start})
    clear = _chat_graph(
        lg,
        lambda state: [
            lg.RemoveMessage(id=lg.REMOVE_ALL_MESSAGES),
            lg.AIMessage(content="fresh", id="f1"),
        ],
    )
    rec.invoke("remove all", clear, {"messages": start})


@scenario(tags=["messages"])
def scenario_messages_coercion(lg: Any, rec: Recorder) -> None:
    """Tuples, dicts and strings become messages of the matching type."""
    graph = _chat_graph(
        lg,
        lambda state: [
            ("ai", "from a tuple"),
            {"role": "assistant", "content": "from a dict"},
            ("system", "sys"),
        ],
    )
    rec.invoke("invoke", graph, {"messages": [("user", "hi"), "plain string"]})
    rec.invoke("single dict", graph, {"messages": {"role": "user", "content": "alone"}})


@scenario(tags=["messages"])
def scenario_add_messages_direct(lg: Any, rec: Recorder) -> None:
    """add_messages called as a plain function on lists and single messages."""
    left = [lg.HumanMessage(content="a", id="1"), lg.AIMessage(content="b", id="2")]
    rec.record("append", lg.add_messages(left, [lg.HumanMessage(content="c", id="3")]))
    rec.record("replace", lg.add_messages(left, lg.AIMessage(content="B", id="2")))
    rec.record("remove", lg.add_messages(left, [lg.RemoveMessage(id="1")]))
    rec.record("coerce", lg.add_messages([], [("human", "x"), ("ai", "y")]))
    rec.raises("remove missing", lg.add_messages, left, [lg.RemoveMessage(id="nope")])


@scenario(tags=["messages", "tools"])
def scenario_messages_tool_calls(lg: Any, rec: Recorder) -> None:
    """AIMessage tool calls and ToolMessage answers survive the reducer unchanged."""

    def reply(state: Any) -> list[Any]:
        if len(state["messages"]) == 1:
            return [
                lg.AIMessage(
                    content="",
                    id="ai1",
                    tool_calls=[{"name": "search", "args": {"q": "owls"}, "id": "call1"}],
                )
            ]
        return [lg.AIMessage(content="done", id="ai2")]

    def tool(state: Any) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        return {
            "messages": [
                lg.ToolMessage(
                    content=f"found {call['args']['q']}", tool_call_id=call["id"], id="t1"
                )
            ]
        }

    def route(state: Any) -> str:
        last = state["messages"][-1]
        return "tool" if getattr(last, "tool_calls", None) else lg.END

    def bot(state: Any) -> dict[str, Any]:
        return {"messages": reply(state)}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("bot", bot)
    builder.add_node("tool", tool)
    builder.add_edge(lg.START, "bot")
    builder.add_conditional_edges("bot", route, ["tool", lg.END])
    builder.add_edge("tool", "bot")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"messages": [lg.HumanMessage(content="find owls", id="h1")]})


@scenario(tags=["messages"])
def scenario_messages_state_subclass(lg: Any, rec: Recorder) -> None:
    """A MessagesState subclass with an extra key keeps both behaviours."""

    class State(lg.MessagesState):
        turns: int

    def bot(state: Any) -> dict[str, Any]:
        return {
            "messages": [lg.AIMessage(content=f"turn {state['turns']}", id=f"a{state['turns']}")],
            "turns": state["turns"] + 1,
        }

    builder = lg.StateGraph(State)
    builder.add_node("bot", bot)
    builder.add_edge(lg.START, "bot")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "hi")], "turns": 0}, config)
    rec.invoke("second turn", graph, {"messages": [("user", "again")]}, config)
    rec.state("state", graph, config)


@scenario(tags=["messages"])
def scenario_messages_custom_annotated(lg: Any, rec: Recorder) -> None:
    """A TypedDict with Annotated[list, add_messages] behaves like MessagesState."""

    class State(TypedDict):
        history: Annotated[list[Any], lg.add_messages]

    def bot(state: State) -> dict[str, Any]:
        return {"history": [lg.AIMessage(content=str(len(state["history"])), id="n")]}

    builder = lg.StateGraph(State)
    builder.add_node("bot", bot)
    builder.add_edge(lg.START, "bot")
    graph = builder.compile()
    rec.invoke("invoke", graph, {"history": [lg.SystemMessage(content="sys", id="s")]})


@scenario(tags=["messages", "parallel"])
def scenario_messages_parallel_writers(lg: Any, rec: Recorder) -> None:
    """Messages from parallel nodes are appended in node-name order."""

    def speaker(name: str) -> Any:
        def node(state: Any) -> dict[str, Any]:
            return {"messages": [lg.AIMessage(content=name, id=f"id-{name}", name=name)]}

        return node

    builder = lg.StateGraph(lg.MessagesState)
    for name in ["zed", "amy", "kim"]:
        builder.add_node(name, speaker(name))
        builder.add_edge(lg.START, name)
    rec.invoke("invoke", builder.compile(), {"messages": []})


@scenario(tags=["messages", "checkpoint"])
def scenario_messages_ids_stable_in_state(lg: Any, rec: Recorder) -> None:
    """Ids given to input messages are the ones stored: replacing by that id works."""

    def bot(state: Any) -> dict[str, Any]:
        return {"messages": [lg.AIMessage(content="reply", id="r")]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(lg.START, "bot")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    result = graph.invoke({"messages": [("user", "first")]}, config)
    first_id = result["messages"][0].id
    rec.state("after run", graph, config)
    graph.update_state(config, {"messages": [lg.HumanMessage(content="edited", id=first_id)]})
    rec.state("after edit", graph, config)


@scenario(tags=["messages", "error"])
def scenario_messages_remove_missing_in_graph(lg: Any, rec: Recorder) -> None:
    """Removing an id that is not in the list fails the run with ValueError."""
    graph = _chat_graph(lg, lambda state: [lg.RemoveMessage(id="missing")])
    rec.invoke("invoke", graph, {"messages": [lg.HumanMessage(content="x", id="x")]})


@scenario(tags=["messages", "parallel"])
def scenario_messages_parallel_replace_same_id(lg: Any, rec: Recorder) -> None:
    """Two parallel nodes replacing the same message id: the later node name wins."""

    def editor(name: str) -> Any:
        def node(state: Any) -> dict[str, Any]:
            return {"messages": [lg.AIMessage(content=f"by {name}", id="shared")]}

        return node

    builder = lg.StateGraph(lg.MessagesState)
    for name in ["zz_editor", "aa_editor"]:
        builder.add_node(name, editor(name))
        builder.add_edge(lg.START, name)
    rec.invoke(
        "invoke",
        builder.compile(),
        {"messages": [lg.AIMessage(content="original", id="shared")]},
    )
