"""LangGraph's prebuilt agent parts on flowcore's models and tools.

``ToolNode`` runs the tool calls of the last ``AIMessage``; ``tools_condition``
routes to it or to ``END``; ``create_react_agent`` wires a flowcore
:class:`~flowcore.llm.LLMProvider` and tools into LangGraph's ReAct loop. Our
messages are turned into flowcore's LLM messages for each model call, and the
model's answer back into an ``AIMessage``.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, get_type_hints

from pydantic import BaseModel
from typing_extensions import TypedDict

from flowcore.compat.langgraph._add_messages import add_messages
from flowcore.compat.langgraph._chat_models import ask_provider, resolve_chat_model
from flowcore.compat.langgraph._messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from flowcore.compat.langgraph._messages_langchain import to_flowcore
from flowcore.compat.langgraph._react_langchain import LangChainModelCall, is_langchain_model
from flowcore.compat.langgraph._savers import RunnableConfig
from flowcore.compat.langgraph._state import RemainingSteps
from flowcore.compat.langgraph._tool_node import ToolNode, _is_ai, _is_tool, _state_value
from flowcore.compat.langgraph._tooling import (
    WrappedTool,
)
from flowcore.compat.langgraph._tools_langchain import (
    is_langchain_message,
)
from flowcore.compat.langgraph._types import END, Send
from flowcore.llm.protocol import LLMProvider
from flowcore.llm.types import LLMRequest, LLMResponse, Message, ToolCall, ToolSpec
from flowcore.tools.runner import Tool

__all__ = [
    "AgentState",
    "AgentStateWithStructuredResponse",
    "create_react_agent",
]


class AgentState(TypedDict):
    """The state of ``create_react_agent``: the conversation, merged by ``add_messages``.

    ``remaining_steps`` is filled in by the run (it is not a channel), so the
    agent answers instead of calling tools when the recursion limit is near.

    Example:
        >>> sorted(AgentState.__annotations__)
        ['messages', 'remaining_steps']
    """

    messages: Annotated[list[AnyMessage], add_messages]
    remaining_steps: NotRequired[RemainingSteps]


class AgentStateWithStructuredResponse(AgentState):
    """``AgentState`` plus the ``structured_response`` asked for with ``response_format``.

    Example:
        >>> "structured_response" in AgentStateWithStructuredResponse.__annotations__
        True
    """

    structured_response: dict[str, Any] | BaseModel


# --- talking to a flowcore model -----------------------------------------------------------


def to_llm_messages(messages: Sequence[BaseMessage]) -> tuple[Message, ...]:
    """Chat messages as flowcore LLM messages (text content; tool calls and ids kept).

    LangChain messages are taken too (as flowcore's of the same type).

    Example:
        >>> to_llm_messages([SystemMessage("Be brief."), HumanMessage("Hi")])[1]
        Message(role='user', content='Hi', tool_call_id=None, tool_calls=())
    """
    converted: list[Message] = []
    for message in to_flowcore(list(messages)):
        if isinstance(message, SystemMessage):
            converted.append(Message("system", message.text))
        elif isinstance(message, HumanMessage):
            converted.append(Message("user", message.text))
        elif isinstance(message, AIMessage):
            calls = tuple(
                ToolCall(id=str(c["id"]), name=c["name"], arguments=c["args"])
                for c in message.tool_calls
            )
            converted.append(Message("assistant", message.text, tool_calls=calls))
        elif isinstance(message, ToolMessage):
            text = message.content if isinstance(message.content, str) else message.text
            converted.append(Message("tool", text, tool_call_id=message.tool_call_id))
        else:
            raise ValueError(
                f"cannot send a {type(message).__name__} (type {message.type!r}) to a model; "
                "use system, human, ai and tool messages"
            )
    return tuple(converted)


def from_llm_response(response: LLMResponse, *, name: str | None = None) -> AIMessage:
    """A flowcore model answer as an ``AIMessage`` (tool calls, token usage, model name).

    Example:
        >>> from_llm_response(LLMResponse(text="Paris")).content
        'Paris'
    """
    usage = response.usage
    return AIMessage(
        response.text,
        id=f"run-{uuid.uuid4()}",
        name=name,
        tool_calls=[
            {"name": c.name, "args": dict(c.arguments), "id": c.id} for c in response.tool_calls
        ],
        usage_metadata={
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        },
        response_metadata={"model_name": response.model, "finish_reason": response.finish_reason},
    )


def _check_history(messages: Sequence[BaseMessage]) -> None:
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    open_calls = [
        call
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["id"] not in answered
    ]
    if open_calls:
        raise ValueError(
            "the conversation has tool calls without a ToolMessage answering them (first few: "
            f"{open_calls[:3]}); models refuse such a history, so add a ToolMessage with the "
            "matching tool_call_id for each call before calling the model again"
        )


OUT_OF_STEPS = "Sorry, need more steps to process this request."
"""The agent's answer when the recursion limit leaves no room for another tool round."""


def _out_of_steps(remaining: Any, response: AIMessage) -> bool:
    return isinstance(remaining, int) and remaining < 2 and bool(response.tool_calls)


Prompt = SystemMessage | str | Callable[[Any], Any]
"""A system prompt string or message, or a function from state to the model's messages."""


async def _model_input(prompt: Prompt | None, state: Any, messages: list[BaseMessage]) -> Any:
    if prompt is None:
        return messages
    if isinstance(prompt, str):
        return [SystemMessage(prompt), *messages]
    if isinstance(prompt, SystemMessage) or is_langchain_message(prompt):
        return [prompt, *messages]
    if callable(prompt):
        result = prompt(state)
        return await result if inspect.isawaitable(result) else result
    raise ValueError(f"Got unexpected type for `prompt`: {type(prompt)}")


def _as_messages(value: Any) -> list[BaseMessage]:
    if isinstance(value, str):
        return [HumanMessage(value)]
    if isinstance(value, Mapping) and "messages" in value:
        value = value["messages"]
    return convert_to_messages(to_flowcore(list(value)))


def _builtin_spec(tool: Mapping[str, Any]) -> ToolSpec:
    spec = tool.get("function", tool)
    return ToolSpec(
        str(spec["name"]),
        str(spec.get("description", "")),
        spec.get("parameters") or spec.get("input_schema") or {"type": "object"},
    )


def _json_schema(schema: Any) -> dict[str, Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, Mapping):
        return dict(schema)
    raise ValueError(
        f"response_format must be a pydantic model class or a JSON Schema dict, got {schema!r}"
    )


def create_react_agent(
    model: LLMProvider | Any,
    tools: Sequence[Tool | WrappedTool | Callable[..., Any] | dict[str, Any]] | ToolNode,
    *,
    prompt: Prompt | None = None,
    response_format: Any = None,
    pre_model_hook: Any = None,
    post_model_hook: Any = None,
    state_schema: Any = None,
    context_schema: Any = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    version: Literal["v1", "v2"] = "v2",
    name: str | None = None,
) -> Any:
    """LangGraph's ReAct agent on a flowcore model: call the model, run its tool calls, repeat.

    The graph has an ``agent`` node (one model call with the tools offered)
    and a ``tools`` node (a :class:`ToolNode`); it ends when the model answers
    without tool calls. ``prompt`` is a system prompt (string or
    ``SystemMessage``) or a function from state to the model's messages.
    ``version="v2"`` runs each tool call as its own task (``Send``);
    ``"v1"`` runs them all in one ``tools`` task. ``response_format`` (a
    pydantic model or JSON Schema, optionally as ``(prompt, schema)``) adds a
    last model call for ``structured_response``. Dict tools are offered to
    the model only. The rest of the options are passed to ``compile``.
    ``model`` is a flowcore provider, a LangChain chat model, or a
    ``"provider:model"`` string naming one of flowcore's providers
    (``"openai:gpt-4o"``, keyed from ``OPENAI_API_KEY``). Every model
    request is billed to the run's usage meter, failed and retried ones too.

    Example:
        >>> from flowcore.llm import ScriptedProvider
        >>> agent = create_react_agent(ScriptedProvider(["Hello!"]), [])
        >>> agent.invoke({"messages": [("user", "Hi")]})["messages"][-1].content
        'Hello!'
    """
    from flowcore.compat.langgraph._graph import StateGraph

    if version not in ("v1", "v2"):
        raise ValueError(f"Invalid version {version}. Supported versions are 'v1' and 'v2'.")
    if isinstance(model, str):
        # LangGraph's "provider:model" spelling, on flowcore's own provider of that name.
        model = resolve_chat_model(model)
    if not isinstance(model, LLMProvider) and not is_langchain_model(model):
        raise TypeError(
            f"create_react_agent needs a flowcore LLMProvider as model (e.g. ScriptedProvider, "
            f"OpenAIProvider), got {type(model).__name__}"
        )
    if state_schema is not None:
        required = {"messages"} | (
            {"structured_response"} if response_format is not None else set()
        )
        missing = required - set(get_type_hints(state_schema))
        if missing:
            raise ValueError(f"Missing required key(s) {missing} in state_schema")
    else:
        state_schema = (
            AgentStateWithStructuredResponse if response_format is not None else AgentState
        )

    builtin: list[ToolSpec] = []
    if isinstance(tools, ToolNode):
        tool_node = tools
    else:
        builtin_tools = [t for t in tools if isinstance(t, dict)]
        builtin = [_builtin_spec(t) for t in builtin_tools]
        tool_node = ToolNode([t for t in tools if not isinstance(t, dict)])
    specs = (*tool_node.specs(), *builtin)
    # A LangChain chat model (or runnable) is called as LangGraph calls it (see _react_langchain).
    chat = (
        LangChainModelCall(model, list(tool_node.tools_by_name.values()), builtin_tools)
        if not isinstance(model, LLMProvider)
        else None
    )
    entry = "pre_model_hook" if pre_model_hook is not None else "agent"

    async def call_model(state: Any) -> dict[str, Any]:
        key = "llm_input_messages" if pre_model_hook is not None else None
        messages = (key and _state_value(state, key)) or _state_value(state, "messages")
        if messages is None:
            raise ValueError(f"Expected input to call_model to have a 'messages' key, got {state}")
        messages = convert_to_messages(to_flowcore(list(messages)))
        _check_history(messages)
        chosen = _as_messages(await _model_input(prompt, state, messages))
        request = LLMRequest(messages=to_llm_messages(chosen), tools=specs)
        response = from_llm_response(await ask_provider(model, request), name=name)
        if _out_of_steps(_state_value(state, "remaining_steps"), response):
            # A managed ``remaining_steps`` says the tool round would hit the limit.
            response = AIMessage(OUT_OF_STEPS, id=response.id)
        return {"messages": [response]}

    async def call_chat_model(state: Any, config: RunnableConfig) -> dict[str, Any]:
        assert chat is not None
        key = "llm_input_messages" if pre_model_hook is not None else None
        messages = (key and _state_value(state, key)) or _state_value(state, "messages")
        if messages is None:
            raise ValueError(f"Expected input to call_model to have a 'messages' key, got {state}")
        _check_history(convert_to_messages(to_flowcore(list(messages))))
        chosen = await _model_input(prompt, state, list(messages))
        if isinstance(chosen, str):
            chosen = [HumanMessage(chosen)]
        elif isinstance(chosen, Mapping) and "messages" in chosen:
            chosen = chosen["messages"]
        response = await chat.answer(list(chosen), config)
        # The agent's name on its answers, as LangGraph sets it.
        response.name = name
        if _out_of_steps(_state_value(state, "remaining_steps"), response):
            response = chat.out_of_steps_message(OUT_OF_STEPS, response.id)
        return {"messages": [response]}

    async def structured_response(state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages = convert_to_messages(to_flowcore(list(_state_value(state, "messages"))))
        schema = response_format
        if isinstance(schema, tuple):
            system, schema = schema
            messages = [SystemMessage(system), *messages]
        if chat is not None:
            return {"structured_response": await chat.structured(messages, schema, config)}
        request = LLMRequest(
            messages=to_llm_messages(messages), response_schema=_json_schema(schema)
        )
        answer = await ask_provider(model, request)
        try:
            data = json.loads(answer.text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"the model's structured response is not JSON ({exc}): {answer.text[:200]!r}"
            ) from None
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        value = schema.model_validate(data) if is_model else data
        return {"structured_response": value}

    input_schema = state_schema
    if pre_model_hook is not None and not (
        isinstance(state_schema, type) and issubclass(state_schema, BaseModel)
    ):

        class CallModelInputSchema(state_schema):  # type: ignore[misc]
            llm_input_messages: list[AnyMessage]

        input_schema = CallModelInputSchema

    graph = StateGraph(state_schema, context_schema)
    graph.add_node(
        "agent", call_model if chat is None else call_chat_model, input_schema=input_schema
    )
    if pre_model_hook is not None:
        graph.add_node("pre_model_hook", pre_model_hook)
        graph.add_edge("pre_model_hook", "agent")
    graph.set_entry_point(entry)
    if post_model_hook is not None:
        graph.add_node("post_model_hook", post_model_hook)
        graph.add_edge("agent", "post_model_hook")
    if response_format is not None:
        graph.add_node("generate_structured_response", structured_response)

    def finish() -> str:
        if post_model_hook is not None:
            return "post_model_hook"
        return "generate_structured_response" if response_format is not None else END

    if not specs:
        if response_format is not None:
            source = "post_model_hook" if post_model_hook is not None else "agent"
            graph.add_edge(source, "generate_structured_response")
        return graph.compile(
            checkpointer=checkpointer,
            store=store,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            debug=debug,
            name=name,
        )

    def sends(state: Any, calls: Sequence[Mapping[str, Any]]) -> list[Send]:
        return [
            Send("tools", {"__type": "tool_call_with_context", "tool_call": call, "state": state})
            for call in calls
        ]

    def should_continue(state: Any) -> Any:
        last = _state_value(state, "messages")[-1]
        if not _is_ai(last) or not last.tool_calls:
            return finish()
        if version == "v1":
            return "tools"
        if post_model_hook is not None:
            return "post_model_hook"
        return sends(state, last.tool_calls)

    graph.add_node("tools", tool_node)
    end = "generate_structured_response" if response_format is not None else END
    if post_model_hook is not None:

        def after_post_hook(state: Any) -> Any:
            messages = _state_value(state, "messages")
            answered = {m.tool_call_id for m in messages if _is_tool(m)}
            last_ai = next(m for m in reversed(messages) if _is_ai(m))
            pending = [c for c in last_ai.tool_calls if c["id"] not in answered]
            if pending:
                return sends(state, pending)
            if _is_tool(messages[-1]):
                return entry
            return end

        graph.add_conditional_edges("post_model_hook", after_post_hook, [entry, "tools", end])
        graph.add_conditional_edges("agent", should_continue, ["post_model_hook"])
    else:
        graph.add_conditional_edges("agent", should_continue, ["tools", end])
    graph.add_edge("tools", entry)
    return graph.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        debug=debug,
        name=name,
    )
