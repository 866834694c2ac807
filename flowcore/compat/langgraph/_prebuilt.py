"""LangGraph's prebuilt agent parts on flowcore's models and tools.

``ToolNode`` runs the tool calls of the last ``AIMessage``; ``tools_condition``
routes to it or to ``END``; ``create_react_agent`` wires a flowcore
:class:`~flowcore.llm.LLMProvider` and tools into LangGraph's ReAct loop. Our
messages are turned into flowcore's LLM messages for each model call, and the
model's answer back into an ``AIMessage``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, get_type_hints

from pydantic import BaseModel
from typing_extensions import TypedDict

from flowcore.compat.langgraph._errors import GraphBubbleUp
from flowcore.compat.langgraph._messages import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    add_messages,
    convert_to_messages,
)
from flowcore.compat.langgraph._messages_langchain import to_flowcore
from flowcore.compat.langgraph._state import RemainingSteps
from flowcore.compat.langgraph._tooling import (
    INVALID_TOOL_NAME_ERROR_TEMPLATE,
    TOOL_CALL_ERROR_TEMPLATE,
    ToolInvocationError,
    WrappedTool,
    message_content,
    tool_content,
    wrap_tool,
)
from flowcore.compat.langgraph._tools_langchain import (
    LangChainTool,
    is_langchain_message,
    langchain_tool,
)
from flowcore.compat.langgraph._types import END, Command, Send
from flowcore.llm.protocol import LLMProvider
from flowcore.llm.types import LLMRequest, LLMResponse, Message, ToolCall, ToolSpec
from flowcore.runtime import run_batch
from flowcore.tools.runner import Tool

__all__ = [
    "AgentState",
    "AgentStateWithStructuredResponse",
    "ToolNode",
    "create_react_agent",
    "tools_condition",
]

ErrorHandling = bool | str | Callable[..., str] | type[Exception] | tuple[type[Exception], ...]
"""What ``ToolNode(handle_tool_errors=...)`` takes."""


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


def _state_value(state: Any, key: str, default: Any = None) -> Any:
    if isinstance(state, Mapping):
        return state.get(key, default)
    return getattr(state, key, default)


def _default_handle_tool_errors(e: Exception) -> str:
    # LangGraph's default: bad arguments go back to the model, a failing tool fails the run.
    if isinstance(e, ToolInvocationError):
        return e.message
    raise e


def _handled_types(handler: Callable[..., str]) -> tuple[type[Exception], ...]:
    """The exception types a handler declares in its first parameter's annotation."""
    params = list(inspect.signature(handler).parameters.values())
    if not params:
        return (Exception,)
    first = params[1] if params[0].name in ("self", "cls") and len(params) == 2 else params[0]
    hint = get_type_hints(handler).get(first.name)
    if hint is None:
        return (Exception,)
    options = getattr(hint, "__args__", None) if not isinstance(hint, type) else None
    candidates = tuple(options) if options else (hint,)
    if all(isinstance(c, type) and issubclass(c, Exception) for c in candidates):
        return candidates
    raise ValueError(
        f"handle_tool_errors={handler!r} annotates its error as {hint!r}; annotate it with an "
        "Exception type or a union of them, e.g. `def handler(e: ValueError | KeyError)`"
    )


def _is_ai(message: Any) -> bool:
    """An AI message: flowcore's, or LangChain's (the same ``type`` and ``tool_calls``)."""
    if isinstance(message, AIMessage):
        return True
    return getattr(message, "type", None) == "ai" and hasattr(message, "tool_calls")


def _is_tool(message: Any) -> bool:
    """A tool message: flowcore's, or LangChain's (the same ``type`` and ``tool_call_id``)."""
    if isinstance(message, ToolMessage):
        return True
    return getattr(message, "type", None) == "tool" and hasattr(message, "tool_call_id")


def _update_messages(items: list[Any]) -> list[Any]:
    """A tool's ``Command`` update as messages; LangChain messages in it stay LangChain's."""
    return [m if is_langchain_message(m) else convert_to_messages([m])[0] for m in items]


class ToolNode:
    """A graph node that runs the tool calls of the last ``AIMessage``, all at once.

    Takes the graph state (``{"messages": [...]}``, or an object with that
    attribute), a list of messages, a list of tool calls, or the per-call
    payload ``create_react_agent`` sends; answers with one ``ToolMessage``
    per call (``{"messages": [...]}`` for state input, a list for list input),
    in call order. A call to an unknown tool gets an error ``ToolMessage``.
    ``handle_tool_errors`` decides which failures become error messages:
    by default only bad arguments do and a tool that raises fails the run;
    ``True`` turns every error into a message, a string replaces the text,
    an exception type (or tuple) limits it to those types, a callable writes
    the text for the types its parameter is annotated with, ``False`` never.

    Example:
        >>> def get_weather(city: str) -> str:
        ...     '''Weather for a city.'''
        ...     return f"Sunny in {city}"
        >>> call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}
        >>> out = ToolNode([get_weather]).invoke({"messages": [AIMessage("", tool_calls=[call])]})
        >>> out["messages"][0].content
        'Sunny in Paris'
    """

    def __init__(
        self,
        tools: Sequence[Tool | WrappedTool | Callable[..., Any]],
        *,
        name: str = "tools",
        tags: list[str] | None = None,
        handle_tool_errors: ErrorHandling = _default_handle_tool_errors,
        messages_key: str = "messages",
    ) -> None:
        self.name = name
        self.tags = tags
        self._handle_tool_errors = handle_tool_errors
        self._messages_key = messages_key
        self._tools: dict[str, WrappedTool] = {}
        for tool in tools:
            wrapped = langchain_tool(tool) or wrap_tool(tool)
            self._tools[wrapped.name] = wrapped

    @property
    def tools_by_name(self) -> dict[str, WrappedTool]:
        """The tools, by name."""
        return dict(self._tools)

    def specs(self) -> list[ToolSpec]:
        """The tools as offered to a model.

        Example:
            >>> ToolNode([]).specs()
            []
        """
        return [t.spec() for t in self._tools.values()]

    async def __call__(
        self, input: list[Any] | dict[str, Any] | BaseModel, config: Mapping[str, Any] | None = None
    ) -> Any:
        """Run as a graph node: the same as :meth:`ainvoke`."""
        return await self.ainvoke(input, config)

    def invoke(self, input: Any, config: Mapping[str, Any] | None = None) -> Any:
        """Run the tool calls outside an event loop.

        Example:
            >>> # ToolNode([search]).invoke([AIMessage("", tool_calls=[...])])
        """
        return asyncio.run(self.ainvoke(input, config))

    async def ainvoke(self, input: Any, config: Mapping[str, Any] | None = None) -> Any:
        """Run the tool calls in ``input`` in parallel and return their results.

        Example:
            >>> # update = await ToolNode([search]).ainvoke(state)
        """
        calls, input_type, state = self._parse_input(input)

        async def one(call: dict[str, Any]) -> tuple[Any, Exception | None]:
            try:
                return await self._run_one(call, input_type, state, config), None
            except Exception as exc:  # every call finishes; the first error in order is raised
                return None, exc

        outcomes = await run_batch(calls, one)
        for outcome in outcomes:
            if outcome is not None and outcome[1] is not None:
                raise outcome[1]
        return self._combine([o[0] for o in outcomes if o is not None], input_type)

    def _parse_input(self, input: Any) -> tuple[list[dict[str, Any]], str, Any]:
        if isinstance(input, list):
            if input and isinstance(input[-1], dict) and input[-1].get("type") == "tool_call":
                return list(input), "tool_calls", {}
            messages: Any = input
            input_type = "list"
        elif isinstance(input, dict) and input.get("__type") == "tool_call_with_context":
            return [input["tool_call"]], "tool_calls", input.get("state")
        elif (isinstance(input, dict) and (messages := input.get(self._messages_key, []))) or (
            messages := getattr(input, self._messages_key, [])
        ):
            input_type = "dict"
        else:
            raise ValueError("No message found in input")
        latest = next((m for m in reversed(messages) if _is_ai(m)), None)
        if latest is None:
            raise ValueError("No AIMessage found in input")
        return [dict(call) for call in latest.tool_calls], input_type, input

    async def _run_one(
        self,
        call: dict[str, Any],
        input_type: str,
        state: Any,
        config: Mapping[str, Any] | None = None,
    ) -> Any:
        tool = self._tools.get(call["name"])
        if tool is None:
            text = INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
                requested_tool=call["name"], available_tools=", ".join(self._tools)
            )
            return ToolMessage(text, name=call["name"], tool_call_id=call["id"], status="error")
        try:
            if isinstance(tool, LangChainTool):
                tools = [t.tool for t in self._tools.values() if isinstance(t, LangChainTool)]
                response = await tool.call(call, state, config, tools)
                if is_langchain_message(response):
                    return response
            else:
                response = await tool.ainvoke(call["args"], state)
            return self._normalize(response, call, tool, input_type)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            text = self._error_text(exc)
            return ToolMessage(text, name=call["name"], tool_call_id=call["id"], status="error")

    def _error_text(self, exc: Exception) -> str:
        flag = self._handle_tool_errors
        if isinstance(flag, type) and issubclass(flag, Exception):
            handled: tuple[type[Exception], ...] = (flag,)
        elif isinstance(flag, tuple):
            handled = flag
        elif callable(flag) and not isinstance(flag, type):
            handled = _handled_types(flag)
        else:
            handled = (Exception,)
        if not flag or not isinstance(exc, handled):
            raise exc
        if isinstance(flag, bool | tuple | type):
            return TOOL_CALL_ERROR_TEMPLATE.format(error=repr(exc))
        if isinstance(flag, str):
            return flag
        return str(flag(exc))

    def _normalize(
        self, response: Any, call: dict[str, Any], tool: WrappedTool, input_type: str
    ) -> Any:
        if isinstance(response, Command):
            return self._checked_command(response, call, input_type)
        if isinstance(response, ToolMessage):
            response.content = message_content(response.content)
            return response
        if (
            isinstance(response, list)
            and response
            and all(isinstance(r, Command | ToolMessage) for r in response)
        ):
            return [self._normalize(r, call, tool, input_type) for r in response]
        return ToolMessage(
            tool_content(response), name=tool.name, tool_call_id=call["id"], status="success"
        )

    def _checked_command(self, command: Command[Any], call: dict[str, Any], input_type: str) -> Any:
        update = command.update
        if isinstance(update, dict):
            if input_type not in ("dict", "tool_calls"):
                raise ValueError(
                    f"tool {call['name']!r} returned Command.update as a dict, which needs state "
                    f"input with a {self._messages_key!r} key; got a list of messages as input"
                )
            messages = _update_messages(list(update.get(self._messages_key, [])))
            command = dataclasses.replace(command, update={**update, self._messages_key: messages})
        elif isinstance(update, list):
            if input_type != "list":
                raise ValueError(
                    f"tool {call['name']!r} returned Command.update as a list of messages, which "
                    "needs a list of messages as input; return a dict with the messages key"
                )
            messages = _update_messages(update)
            command = dataclasses.replace(command, update=messages)
        else:
            return command
        if messages == [RemoveMessage(id=REMOVE_ALL_MESSAGES)]:
            return command
        answered = False
        for message in messages:
            if _is_tool(message) and message.tool_call_id == call["id"]:
                message.name = call["name"]
                answered = True
        if command.graph is None and not answered:
            raise ValueError(
                f"tool {call['name']!r} returned a Command without a ToolMessage for its call "
                f"{call['id']!r}; every tool call needs one, e.g. Command(update={{"
                f"{self._messages_key!r}: [ToolMessage('done', tool_call_id=...)]}})"
            )
        return command

    def _combine(self, outputs: list[Any], input_type: str) -> Any:
        flat: list[Any] = []
        for output in outputs:
            flat.extend(output if isinstance(output, list) else [output])
        if not any(isinstance(o, Command) for o in flat):
            return flat if input_type == "list" else {self._messages_key: flat}
        combined: list[Any] = []
        parent_sends: list[Send] = []
        for output in flat:
            if isinstance(output, Command):
                goto = output.goto
                if (
                    output.graph == Command.PARENT
                    and isinstance(goto, list)
                    and all(isinstance(s, Send) for s in goto)
                ):
                    parent_sends.extend(goto)
                else:
                    combined.append(output)
            else:
                combined.append(
                    [output] if input_type == "list" else {self._messages_key: [output]}
                )
        if parent_sends:
            combined.append(Command(graph=Command.PARENT, goto=parent_sends))
        return combined


def tools_condition(state: Any, messages_key: str = "messages") -> Literal["tools", "__end__"]:
    """Route to ``"tools"`` when the last message asks for tool calls, else to ``END``.

    Example:
        >>> tools_condition({"messages": [AIMessage("Done.")]})
        '__end__'
    """
    if isinstance(state, list):
        last = state[-1]
    elif (isinstance(state, dict) and (messages := state.get(messages_key, []))) or (
        messages := getattr(state, messages_key, [])
    ):
        last = messages[-1]
    else:
        raise ValueError(f"No messages found in input state to tool_edge: {state}")
    if getattr(last, "tool_calls", None):
        return "tools"
    return "__end__"


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
    model: LLMProvider,
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

    Example:
        >>> from flowcore.llm import ScriptedProvider
        >>> agent = create_react_agent(ScriptedProvider(["Hello!"]), [])
        >>> agent.invoke({"messages": [("user", "Hi")]})["messages"][-1].content
        'Hello!'
    """
    from flowcore.compat.langgraph._graph import StateGraph

    if version not in ("v1", "v2"):
        raise ValueError(f"Invalid version {version}. Supported versions are 'v1' and 'v2'.")
    if not isinstance(model, LLMProvider):
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
        builtin = [_builtin_spec(t) for t in tools if isinstance(t, dict)]
        tool_node = ToolNode([t for t in tools if not isinstance(t, dict)])
    specs = (*tool_node.specs(), *builtin)
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
        response = from_llm_response(await model.complete(request), name=name)
        if _out_of_steps(_state_value(state, "remaining_steps"), response):
            # A managed ``remaining_steps`` says the tool round would hit the limit.
            response = AIMessage(OUT_OF_STEPS, id=response.id)
        return {"messages": [response]}

    async def structured_response(state: Any) -> dict[str, Any]:
        messages = convert_to_messages(to_flowcore(list(_state_value(state, "messages"))))
        schema = response_format
        if isinstance(schema, tuple):
            system, schema = schema
            messages = [SystemMessage(system), *messages]
        request = LLMRequest(
            messages=to_llm_messages(messages), response_schema=_json_schema(schema)
        )
        answer = await model.complete(request)
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
    graph.add_node("agent", call_model, input_schema=input_schema)
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
