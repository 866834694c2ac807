"""``ToolNode`` and ``tools_condition``: running a model's tool calls as a graph node.

A ``ToolNode`` runs each tool call of the last AI message (flowcore tools,
plain functions or LangChain tools), in parallel, and answers with one
``ToolMessage`` per call; errors become messages or propagate, as its
``handle_tool_errors`` says. ``tools_condition`` routes to the tools while the
model asks for some.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel

from flowcore.compat.langgraph._call_records import ToolCallMade, report_tool_call
from flowcore.compat.langgraph._errors import GraphBubbleUp
from flowcore.compat.langgraph._messages import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    RemoveMessage,
    ToolMessage,
    convert_to_messages,
)
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
from flowcore.compat.langgraph._types import Command, Send
from flowcore.llm.types import ToolSpec
from flowcore.runtime import run_batch
from flowcore.tools.runner import Tool

__all__ = ["ErrorHandling", "ToolNode", "tools_condition"]


ErrorHandling = bool | str | Callable[..., str] | type[Exception] | tuple[type[Exception], ...]


"""What ``ToolNode(handle_tool_errors=...)`` takes."""


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
            report_tool_call(lambda node, step: _started(node, step, call))
            try:
                output = await self._run_one(call, input_type, state, config)
            except Exception as exc:  # every call finishes; the first error in order is raised
                failure = exc
                report_tool_call(lambda node, step: _ended(node, step, call, None, failure))
                return None, exc
            report_tool_call(lambda node, step: _ended(node, step, call, output, None))
            return output, None

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


def _started(node: str, step: int, call: Mapping[str, Any]) -> ToolCallMade:
    """The record of tool call ``call`` starting in ``node`` (see _call_records)."""
    args = call.get("args")
    return ToolCallMade(
        node,
        step,
        "start",
        str(call.get("id") or ""),
        str(call.get("name") or ""),
        dict(args) if isinstance(args, Mapping) else {},
    )


def _ended(
    node: str, step: int, call: Mapping[str, Any], output: Any, error: Exception | None
) -> ToolCallMade:
    """The record of tool call ``call`` ending with ``output`` (a message) or ``error``."""
    failed = error is not None or getattr(output, "status", None) == "error"
    content = getattr(output, "content", None)
    text = content if isinstance(content, str) else None
    return ToolCallMade(
        node,
        step,
        "end",
        str(call.get("id") or ""),
        str(call.get("name") or ""),
        {},
        is_error=failed,
        error_code=None if not failed else type(error).__name__ if error else "tool_error",
        safe_message=text if failed and error is None else None,
        result=None if failed or text is None else {"content": text},
    )


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
