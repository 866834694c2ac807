"""Spec: LangGraph's prebuilt ReAct parts (ToolNode, tools_condition, create_react_agent).

The agent runs a flowcore LLMProvider (here ScriptedProvider or a small
looping provider) and flowcore Tools or typed Python functions; the same
scenarios also run on LangGraph's own prebuilt agent when it is installed.
"""

from __future__ import annotations

import asyncio
import operator
import threading
import warnings
from collections.abc import AsyncIterator
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from flowcore.compat.langgraph import (
    END,
    START,
    AgentState,
    AIMessage,
    Command,
    GraphRecursionError,
    HumanMessage,
    InjectedState,
    InMemorySaver,
    MessagesState,
    StateGraph,
    SystemMessage,
    ToolMessage,
    ToolNode,
    create_react_agent,
    interrupt,
    tools_condition,
)
from flowcore.compat.langgraph._chat_models import resolve_chat_model
from flowcore.errors import InvalidInputError
from flowcore.llm import LLMRequest, LLMResponse, ScriptedProvider, StreamEvent, ToolSpec, Usage
from flowcore.llm import ToolCall as LLMToolCall
from flowcore.tools import Tool


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"It is sunny in {city}"


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"kaboom: {reason}")


def _ai(*calls: tuple[str, str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": name, "args": args, "id": cid} for cid, name, args in calls]
    )


class LoopingModel:
    """A model that asks for the weather forever."""

    name = "looping"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        call = LLMToolCall(f"c{self.calls}", "get_weather", {"city": "Oslo"})
        return LLMResponse(tool_calls=(call,), usage=Usage(1, 1), model="looping")

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        response = await self.complete(request)
        yield StreamEvent(kind="done", response=response)


# --- ToolNode -----------------------------------------------------------------------------


async def test_tool_node_answers_each_call_of_the_last_ai_message_in_call_order() -> None:
    state = {
        "messages": [
            HumanMessage("Weather?"),
            _ai(("c1", "get_weather", {"city": "Paris"}), ("c2", "get_weather", {"city": "Oslo"})),
        ]
    }

    update = await ToolNode([get_weather]).ainvoke(state)

    assert update == {
        "messages": [
            ToolMessage("It is sunny in Paris", name="get_weather", tool_call_id="c1"),
            ToolMessage("It is sunny in Oslo", name="get_weather", tool_call_id="c2"),
        ]
    }


async def test_list_input_gets_a_list_of_tool_messages_and_tool_calls_can_be_given_directly() -> (
    None
):
    node = ToolNode([get_weather])
    call = {"name": "get_weather", "args": {"city": "Rome"}, "id": "c1", "type": "tool_call"}

    from_messages = await node.ainvoke([_ai(("c1", "get_weather", {"city": "Rome"}))])
    from_calls = await node.ainvoke([call])

    expected = [ToolMessage("It is sunny in Rome", name="get_weather", tool_call_id="c1")]
    assert from_messages == expected
    assert from_calls == {"messages": expected}


async def test_async_tools_run_concurrently() -> None:
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def meet(me: str, other: str) -> str:
        """Waits until the other call has started too."""
        started[me].set()
        await asyncio.wait_for(started[other].wait(), timeout=30)  # only hit on failure
        return me

    update = await ToolNode([meet]).ainvoke(
        [_ai(("c1", "meet", {"me": "a", "other": "b"}), ("c2", "meet", {"me": "b", "other": "a"}))]
    )

    assert [m.content for m in update] == ["a", "b"]


async def test_sync_tools_run_in_worker_threads_side_by_side() -> None:
    barrier = threading.Barrier(2, timeout=30)  # only hit on failure
    loop_thread = threading.get_ident()

    def wait_for_partner(n: int) -> bool:
        """Blocks until the other call arrives; True when off the event loop's thread."""
        barrier.wait()
        return threading.get_ident() != loop_thread

    update = await ToolNode([wait_for_partner]).ainvoke(
        [_ai(("c1", "wait_for_partner", {"n": 1}), ("c2", "wait_for_partner", {"n": 2}))]
    )

    assert [m.content for m in update] == ["true", "true"]


async def test_bad_arguments_and_unknown_tools_become_error_messages_for_the_model() -> None:
    update = await ToolNode([get_weather]).ainvoke(
        [_ai(("c1", "get_weather", {"city": 2}), ("c2", "get_forecast", {}))]
    )

    assert update == [
        ToolMessage(
            "Error invoking tool 'get_weather' with kwargs {'city': 2} with error:\n"
            " city: Input should be a valid string\n"
            " Please fix the error and try again.",
            name="get_weather",
            tool_call_id="c1",
            status="error",
        ),
        ToolMessage(
            "Error: get_forecast is not a valid tool, try one of [get_weather].",
            name="get_forecast",
            tool_call_id="c2",
            status="error",
        ),
    ]


async def test_a_failing_tool_fails_the_node_by_default() -> None:
    with pytest.raises(RuntimeError, match="kaboom: why"):
        await ToolNode([explode]).ainvoke([_ai(("c1", "explode", {"reason": "why"}))])


@pytest.mark.parametrize(
    ("handling", "content"),
    [
        (True, "Error: RuntimeError('kaboom: why')\n Please fix your mistakes."),
        ("That tool is down.", "That tool is down."),
        (RuntimeError, "Error: RuntimeError('kaboom: why')\n Please fix your mistakes."),
        (
            (KeyError, RuntimeError),
            "Error: RuntimeError('kaboom: why')\n Please fix your mistakes.",
        ),
    ],
)
async def test_handle_tool_errors_turns_failures_into_error_messages(
    handling: Any, content: str
) -> None:
    update = await ToolNode([explode], handle_tool_errors=handling).ainvoke(
        [_ai(("c1", "explode", {"reason": "why"}))]
    )

    assert update == [ToolMessage(content, name="explode", tool_call_id="c1", status="error")]


async def test_an_error_handler_function_handles_only_the_types_it_is_annotated_with() -> None:
    def runtime_only(e: RuntimeError) -> str:
        return f"handled {type(e).__name__}"

    def key_only(e: KeyError) -> str:
        return "never"

    handled = await ToolNode([explode], handle_tool_errors=runtime_only).ainvoke(
        [_ai(("c1", "explode", {"reason": "x"}))]
    )

    assert handled[0].content == "handled RuntimeError"
    with pytest.raises(RuntimeError):
        await ToolNode([explode], handle_tool_errors=key_only).ainvoke(
            [_ai(("c1", "explode", {"reason": "x"}))]
        )
    with pytest.raises(RuntimeError):
        await ToolNode([explode], handle_tool_errors=False).ainvoke(
            [_ai(("c1", "explode", {"reason": "x"}))]
        )


@pytest.mark.parametrize(
    ("returned", "content"),
    [
        ({"temp": 21, "sky": "clear"}, '{"temp": 21, "sky": "clear"}'),
        (["a", "b"], '["a", "b"]'),
        (42, "42"),
        ([{"type": "text", "text": "hi"}], [{"type": "text", "text": "hi"}]),
        ("plain", "plain"),
    ],
)
async def test_tool_results_become_message_content_like_langchain_tools(
    returned: Any, content: Any
) -> None:
    def give() -> Any:
        """Returns a fixed value."""
        return returned

    [message] = await ToolNode([give]).ainvoke([_ai(("c1", "give", {}))])

    assert message.content == content


async def test_a_tool_may_return_its_own_tool_message() -> None:
    def custom() -> ToolMessage:
        """Answers with a full message."""
        return ToolMessage({"n": 1}, tool_call_id="c1", artifact={"raw": True})

    [message] = await ToolNode([custom]).ainvoke([_ai(("c1", "custom", {}))])

    assert message.content == "{'n': 1}"
    assert message.artifact == {"raw": True}


class CityArgs(BaseModel):
    city: str


class Forecast(BaseModel):
    city: str
    high: int


async def test_flowcore_tools_keep_their_schema_and_give_their_validated_output() -> None:
    async def forecast(args: CityArgs) -> Forecast:
        return Forecast(city=args.city, high=23)

    tool = Tool("forecast", "Tomorrow's forecast", CityArgs, Forecast, forecast, {"high"})
    node = ToolNode([tool])

    update = await node.ainvoke([_ai(("c1", "forecast", {"city": "Lima"}), ("c2", "forecast", {}))])

    assert node.specs() == [
        ToolSpec(
            "forecast",
            "Tomorrow's forecast",
            {
                "properties": {"city": {"title": "City", "type": "string"}},
                "required": ["city"],
                "type": "object",
            },
        )
    ]
    assert update[0] == ToolMessage(
        '{"city": "Lima", "high": 23}', name="forecast", tool_call_id="c1"
    )
    assert update[1].status == "error"
    assert "city: Field required" in update[1].content


async def test_a_flowcore_tool_that_times_out_fails_like_any_failing_tool() -> None:
    async def slow(args: CityArgs) -> Forecast:
        await asyncio.sleep(5)
        raise AssertionError("not reached")

    tool = Tool("slow", "Slow", CityArgs, Forecast, slow, {"high"}, timeout=0.05)

    [message] = await ToolNode([tool], handle_tool_errors=True).ainvoke(
        [_ai(("c1", "slow", {"city": "x"}))]
    )

    assert message.status == "error"
    assert "TimeoutError" in message.content


async def test_injected_state_parameters_get_the_state_and_are_hidden_from_the_model() -> None:
    def count(word: str, state: Annotated[dict[str, Any], InjectedState]) -> int:
        """Counts messages."""
        return len(state["messages"])

    def first(messages: Annotated[list[Any], InjectedState("messages")]) -> str:
        """The first message."""
        return str(messages[0].content)

    node = ToolNode([count, first])
    state = {
        "messages": [
            HumanMessage("hello"),
            _ai(("c1", "count", {"word": "x"}), ("c2", "first", {})),
        ]
    }

    update = await node.ainvoke(state)

    assert [m.content for m in update["messages"]] == ["2", "hello"]
    assert node.specs()[0].parameters["required"] == ["word"]
    assert node.specs()[1].parameters["properties"] == {}


async def test_a_tool_returning_a_command_must_answer_its_call() -> None:
    def remember(fact: str) -> Command[Any]:
        """Stores a fact in state."""
        return Command(update={"facts": [fact], "messages": [ToolMessage("ok", tool_call_id="c1")]})

    def forgetful(fact: str) -> Command[Any]:
        """Forgets to answer."""
        return Command(update={"facts": [fact]})

    state = {"messages": [_ai(("c1", "remember", {"fact": "sky is blue"}))]}
    [command] = await ToolNode([remember]).ainvoke(state)

    assert command.update["facts"] == ["sky is blue"]
    assert command.update["messages"] == [ToolMessage("ok", name="remember", tool_call_id="c1")]
    with pytest.raises(ValueError, match="without a ToolMessage for its call 'c1'"):
        await ToolNode([forgetful]).ainvoke({"messages": [_ai(("c1", "forgetful", {"fact": "x"}))]})


async def test_tool_node_refuses_input_without_an_ai_message() -> None:
    with pytest.raises(ValueError, match="No AIMessage found in input"):
        await ToolNode([get_weather]).ainvoke({"messages": [HumanMessage("hi")]})
    with pytest.raises(ValueError, match="No message found in input"):
        await ToolNode([get_weather]).ainvoke({"messages": []})


def test_tools_condition_routes_tool_calls_to_tools_and_the_rest_to_end() -> None:
    class State(BaseModel):
        messages: list[Any]

    assert tools_condition({"messages": [_ai(("c1", "x", {}))]}) == "tools"
    assert tools_condition({"messages": [AIMessage("done")]}) == END
    assert tools_condition([HumanMessage("hi")]) == END
    assert tools_condition(State(messages=[_ai(("c1", "x", {}))])) == "tools"
    with pytest.raises(ValueError, match="No messages found"):
        tools_condition({"messages": []})


# --- graphs ---------------------------------------------------------------------------------


def _weather_script() -> ScriptedProvider:
    return ScriptedProvider(
        [
            LLMResponse(
                tool_calls=(LLMToolCall("c1", "get_weather", {"city": "Paris"}),),
                usage=Usage(12, 5),
                model="scripted",
            ),
            "It is sunny in Paris today.",
        ]
    )


async def test_seed_react_agent_calls_a_tool_reads_the_result_and_answers() -> None:
    model = _weather_script()
    agent = create_react_agent(model=model, tools=[get_weather], prompt="You are a weather bot.")

    result = await agent.ainvoke({"messages": [{"role": "user", "content": "Weather in Paris?"}]})

    messages = result["messages"]
    assert [(m.type, m.content) for m in messages] == [
        ("human", "Weather in Paris?"),
        ("ai", ""),
        ("tool", "It is sunny in Paris"),
        ("ai", "It is sunny in Paris today."),
    ]
    assert messages[1].tool_calls == [
        {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1", "type": "tool_call"}
    ]
    assert messages[1].usage_metadata == {
        "input_tokens": 12,
        "output_tokens": 5,
        "total_tokens": 17,
    }
    assert messages[2].tool_call_id == "c1"
    assert model.remaining == 0
    # The model saw the system prompt first, the tools offered, and the tool result.
    first, second = model.requests
    assert [(m.role, m.content) for m in first.messages] == [
        ("system", "You are a weather bot."),
        ("user", "Weather in Paris?"),
    ]
    assert [t.name for t in first.tools] == ["get_weather"]
    assert second.messages[2].tool_calls[0].arguments == {"city": "Paris"}
    assert (second.messages[3].role, second.messages[3].tool_call_id) == ("tool", "c1")


def test_the_agent_streams_agent_tools_agent_updates() -> None:
    agent = create_react_agent(_weather_script(), [get_weather])

    chunks = list(
        agent.stream({"messages": [("user", "Weather in Paris?")]}, stream_mode="updates")
    )

    assert [next(iter(c)) for c in chunks] == ["agent", "tools", "agent"]
    assert chunks[1]["tools"]["messages"][0].content == "It is sunny in Paris"


def test_a_model_that_never_stops_calling_tools_hits_the_recursion_limit() -> None:
    model = LoopingModel()
    agent = create_react_agent(model, [get_weather])

    with pytest.raises(GraphRecursionError, match="Recursion limit of 9 reached"):
        agent.invoke({"messages": [("user", "Weather?")]}, {"recursion_limit": 9})
    assert model.calls == 5


def test_without_tools_the_agent_is_one_model_call() -> None:
    agent = create_react_agent(ScriptedProvider(["Hello!"]), [], name="greeter")

    result = agent.invoke({"messages": [("user", "Hi")]})

    assert [(m.type, m.content, m.name) for m in result["messages"]] == [
        ("human", "Hi", None),
        ("ai", "Hello!", "greeter"),
    ]


def test_version_v1_runs_all_tool_calls_in_one_tools_task() -> None:
    model = ScriptedProvider(
        [
            LLMResponse(
                tool_calls=(
                    LLMToolCall("c1", "get_weather", {"city": "Paris"}),
                    LLMToolCall("c2", "get_weather", {"city": "Oslo"}),
                )
            ),
            "Done.",
        ]
    )
    v1 = create_react_agent(model, [get_weather], version="v1")

    chunks = list(v1.stream({"messages": [("user", "Weather?")]}, stream_mode="updates"))

    assert [next(iter(c)) for c in chunks] == ["agent", "tools", "agent"]
    assert [m.tool_call_id for m in chunks[1]["tools"]["messages"]] == ["c1", "c2"]


def test_a_thread_keeps_the_conversation_and_a_tool_can_pause_for_a_human() -> None:
    def book_table(restaurant: str) -> str:
        """Books a table after a human approves."""
        answer = interrupt({"approve": restaurant})
        return f"booked {restaurant}" if answer == "yes" else "not booked"

    model = ScriptedProvider(
        [
            LLMResponse(tool_calls=(LLMToolCall("c1", "book_table", {"restaurant": "Chez Nous"}),)),
            "Your table is booked.",
            "You are welcome.",
        ]
    )
    agent = create_react_agent(model, [book_table], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "dinner"}}

    paused = agent.invoke({"messages": [("user", "Book Chez Nous")]}, config)
    resumed = agent.invoke(Command(resume="yes"), config)
    later = agent.invoke({"messages": [("user", "Thanks!")]}, config)

    assert paused["__interrupt__"][0].value == {"approve": "Chez Nous"}
    assert agent.get_state(config).next == ()
    assert resumed["messages"][-2].content == "booked Chez Nous"
    assert [m.type for m in later["messages"]] == ["human", "ai", "tool", "ai", "human", "ai"]
    assert len(model.requests[-1].messages) == 5


def test_a_prompt_function_chooses_the_models_messages() -> None:
    model = ScriptedProvider(["ok"])

    def only_last(state: dict[str, Any]) -> list[Any]:
        return [SystemMessage("Answer the last question."), state["messages"][-1]]

    agent = create_react_agent(model, [], prompt=only_last)
    agent.invoke({"messages": [("user", "one"), ("ai", "1"), ("user", "two")]})

    assert [(m.role, m.content) for m in model.requests[0].messages] == [
        ("system", "Answer the last question."),
        ("user", "two"),
    ]


class Verdict(BaseModel):
    city: str
    sunny: bool


def test_response_format_adds_a_structured_response_from_a_last_model_call() -> None:
    model = ScriptedProvider(["It is sunny in Paris.", '{"city": "Paris", "sunny": true}'])
    agent = create_react_agent(model, [get_weather], response_format=("Fill the form.", Verdict))

    result = agent.invoke({"messages": [("user", "Weather in Paris?")]})

    assert result["structured_response"] == Verdict(city="Paris", sunny=True)
    last = model.requests[-1]
    assert last.response_schema == Verdict.model_json_schema()
    assert last.messages[0] == type(last.messages[0])("system", "Fill the form.")


class FactsState(AgentState):
    facts: Annotated[list[str], operator.add]


def test_a_tool_command_updates_a_custom_state_schema_in_the_agent() -> None:
    def remember(fact: str) -> Command[Any]:
        """Remembers a fact."""
        answer = ToolMessage("noted", tool_call_id="c1")
        return Command(update={"facts": [fact], "messages": [answer]})

    model = ScriptedProvider(
        [LLMResponse(tool_calls=(LLMToolCall("c1", "remember", {"fact": "sky is blue"}),)), "Ok."]
    )
    agent = create_react_agent(model, [remember], state_schema=FactsState)

    result = agent.invoke({"messages": [("user", "Remember: sky is blue")]})

    assert result["facts"] == ["sky is blue"]
    assert [(m.type, m.content, m.name) for m in result["messages"][2:]] == [
        ("tool", "noted", "remember"),
        ("ai", "Ok.", None),
    ]


def test_a_pre_model_hook_can_give_the_model_other_messages_than_the_state_keeps() -> None:
    model = ScriptedProvider(["Short answer."])

    def trim(state: dict[str, Any]) -> dict[str, Any]:
        return {"llm_input_messages": state["messages"][-1:]}

    agent = create_react_agent(model, [get_weather], pre_model_hook=trim)
    result = agent.invoke({"messages": [("user", "old"), ("ai", "older answer"), ("user", "new")]})

    assert [m.content for m in model.requests[0].messages] == ["new"]
    assert len(result["messages"]) == 4


def test_a_state_schema_without_messages_is_refused() -> None:
    class NoMessages(TypedDict):
        facts: list[str]

    with pytest.raises(ValueError, match="Missing required key"):
        create_react_agent(ScriptedProvider([]), [get_weather], state_schema=NoMessages)


def test_a_history_with_unanswered_tool_calls_is_refused_before_calling_the_model() -> None:
    model = ScriptedProvider(["never"])
    agent = create_react_agent(model, [get_weather])

    with pytest.raises(ValueError, match="tool calls without a ToolMessage"):
        agent.invoke({"messages": [("user", "hi"), _ai(("c9", "get_weather", {"city": "X"}))]})
    assert model.requests == []


def test_the_model_must_be_a_flowcore_provider() -> None:
    with pytest.raises(TypeError, match="needs a flowcore LLMProvider"):
        create_react_agent(42, [get_weather])


def test_a_provider_model_string_names_flowcores_own_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")

    provider = resolve_chat_model("openai:gpt-4o")

    assert (provider.name, provider.model, provider.base_url) == (  # type: ignore[attr-defined]
        "openai",
        "gpt-4o",
        "http://127.0.0.1:9/v1",
    )
    assert create_react_agent("openai:gpt-4o", [get_weather]) is not None


@pytest.mark.parametrize(
    ("spec", "env", "says"),
    [
        ("gpt-4o", {}, "not a 'provider:model' string"),
        ("mistral:large", {}, "no provider for"),
        ("anthropic:claude-x", {}, "needs the ANTHROPIC_API_KEY"),
    ],
)
def test_a_bad_provider_model_string_says_what_to_write(
    spec: str, env: dict[str, str], says: str
) -> None:
    with pytest.raises(InvalidInputError, match=says):
        resolve_chat_model(spec, env=env)


def test_tool_node_and_tools_condition_build_the_seed_graph_by_hand() -> None:
    model = _weather_script()
    tools = ToolNode([get_weather])

    async def agent(state: MessagesState) -> dict[str, Any]:
        from flowcore.compat.langgraph._prebuilt import from_llm_response, to_llm_messages

        request = LLMRequest(to_llm_messages(state["messages"]), tools=tuple(tools.specs()))
        return {"messages": [from_llm_response(await model.complete(request))]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")

    result = graph.compile().invoke({"messages": [("user", "Weather in Paris?")]})

    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai"]


# --- side by side with LangGraph ----------------------------------------------------------


def _normalized(messages: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (
            m.type,
            m.content,
            m.name,
            getattr(m, "tool_calls", None),
            getattr(m, "tool_call_id", None),
            getattr(m, "status", None),
        )
        for m in messages
    ]


SCENARIO_TOOL_CALLS = [
    ("c1", "get_weather", {"city": "Paris"}),
    ("c2", "get_weather", {"city": 7}),
    ("c3", "get_forecast", {}),
]


def _run_langgraph(final: str, recursion_limit: int | None = None, loop: bool = False) -> Any:
    pytest.importorskip("langgraph")
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage as LcAIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langgraph.errors import GraphRecursionError as LgRecursionError
    from langgraph.prebuilt import create_react_agent as lg_create_react_agent

    class Scripted(BaseChatModel):
        replies: list[Any]

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            # A fresh message each time: the reducer gives it an id in place.
            reply = self.replies[0].model_copy() if loop else self.replies.pop(0)
            return ChatResult(generations=[ChatGeneration(message=reply)])

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        @property
        def _llm_type(self) -> str:
            return "scripted"

    def make_agent() -> Any:
        if loop:
            calls = [{"name": "get_weather", "args": {"city": "Oslo"}, "id": "x"}]
            replies = [LcAIMessage("", tool_calls=calls)]
        else:
            calls = [{"name": n, "args": a, "id": c} for c, n, a in SCENARIO_TOOL_CALLS]
            replies = [LcAIMessage("", tool_calls=calls), LcAIMessage(final)]
        model = Scripted(replies=replies)
        return lg_create_react_agent(model, [get_weather], prompt="Be brief.", name="bot")

    config = {"recursion_limit": recursion_limit} if recursion_limit else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = make_agent().invoke({"messages": [("user", "Weather?")]}, config)
        except LgRecursionError:
            return "GraphRecursionError"
        updates = list(
            make_agent().stream({"messages": [("user", "Weather?")]}, stream_mode="updates")
        )
    return _normalized(result["messages"]), _update_nodes(updates)


def _run_ours(final: str, recursion_limit: int | None = None, loop: bool = False) -> Any:
    def script() -> Any:
        if loop:
            return LoopingModel()
        calls = tuple(LLMToolCall(c, n, a) for c, n, a in SCENARIO_TOOL_CALLS)
        return ScriptedProvider([LLMResponse(tool_calls=calls), final])

    config = {"recursion_limit": recursion_limit} if recursion_limit else None
    agent = create_react_agent(script(), [get_weather], prompt="Be brief.", name="bot")
    try:
        result = agent.invoke({"messages": [("user", "Weather?")]}, config)
    except GraphRecursionError:
        return "GraphRecursionError"
    agent = create_react_agent(script(), [get_weather], prompt="Be brief.", name="bot")
    updates = list(agent.stream({"messages": [("user", "Weather?")]}, stream_mode="updates"))
    return _normalized(result["messages"]), _update_nodes(updates)


def _update_nodes(updates: list[dict[str, Any]]) -> list[str]:
    # Updates within a superstep arrive in completion order: compare them as a sorted group.
    return sorted(next(iter(u)) for u in updates)


def test_the_react_scenario_matches_langgraph() -> None:
    theirs = _run_langgraph("Sunny in Paris.")

    assert _run_ours("Sunny in Paris.") == theirs


def test_an_endless_tool_loop_matches_langgraph_at_an_odd_recursion_limit() -> None:
    theirs = _run_langgraph("", recursion_limit=7, loop=True)

    assert theirs == "GraphRecursionError"
    assert _run_ours("", recursion_limit=7, loop=True) == theirs
