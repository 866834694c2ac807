"""Chat messages with LangChain's shapes, and LangGraph's ``add_messages`` reducer.

The classes are plain pydantic models defined at module level, so flowcore's
checkpoint serializer stores and restores them like any other model. Nothing
here imports langchain: the fields, constructor shapes and coercion rules
follow ``langchain_core.messages`` so code written against it keeps working.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import TypedDict

from flowcore.compat.langgraph._messages_langchain import (
    equal_to_langchain,
)

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "AIMessage",
    "AnyMessage",
    "BaseMessage",
    "HumanMessage",
    "InvalidToolCall",
    "MessageLikeRepresentation",
    "Messages",
    "RemoveMessage",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "convert_to_messages",
    "message_to_dict",
    "messages_from_dict",
    "messages_to_dict",
]

REMOVE_ALL_MESSAGES = "__remove_all__"
"""The id of a ``RemoveMessage`` that clears every message before it."""

Content: TypeAlias = str | list[str | dict[Any, Any]]


class ToolCall(TypedDict):
    """A model's request to run tool ``name`` with ``args``; answer it with a ToolMessage.

    Example:
        >>> ToolCall(name="search", args={"q": "x"}, id="c1", type="tool_call")["name"]
        'search'
    """

    name: str
    args: dict[str, Any]
    id: str | None
    type: NotRequired[Literal["tool_call"]]


class InvalidToolCall(TypedDict):
    """A tool call the model produced but that could not be parsed (``args`` is raw text).

    Example:
        >>> InvalidToolCall(name="s", args="{", id="c1", error=None)["args"]
        '{'
    """

    name: str | None
    args: str | None
    id: str | None
    error: str | None
    type: NotRequired[Literal["invalid_tool_call"]]


class BaseMessage(BaseModel):
    """One chat message: its ``type``, ``content`` (text or content blocks) and optional ``id``.

    Content is passed positionally or as ``content=``; unknown keyword
    arguments are kept as extra fields, as LangChain does. Two messages are
    equal when their class and every field are equal.

    Example:
        >>> HumanMessage("hi", id="1") == HumanMessage(content="hi", id="1")
        True
    """

    model_config = ConfigDict(extra="allow")

    content: Content
    additional_kwargs: dict[Any, Any] = Field(default_factory=dict)
    response_metadata: dict[Any, Any] = Field(default_factory=dict)
    type: str
    name: str | None = None
    id: str | None = Field(default=None, coerce_numbers_to_str=True)

    def __init__(self, content: Content | None = None, **kwargs: Any) -> None:
        if content is not None:
            kwargs["content"] = content
        super().__init__(**kwargs)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # Like LangChain: leave out optional fields still at their plain default.
        fields = type(self).model_fields
        for key, value in super().__repr_args__():
            info = fields.get(key) if isinstance(key, str) else None
            if (
                info is None
                or info.is_required()
                or info.default_factory is not None
                or value != info.default
            ):
                yield key, value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BaseModel):
            mixed = equal_to_langchain(self, other)
            return super().__eq__(other) if mixed is None else mixed
        return NotImplemented

    # Between two messages of one class this is pydantic's __eq__ (savers rely on it).
    __eq__.model_eq_within_class = True  # type: ignore[attr-defined]

    @property
    def text(self) -> str:
        """The message's text: the string content, or its text blocks joined.

        Example:
            >>> AIMessage(["a", {"type": "text", "text": "b"}, {"type": "image"}]).text
            'ab'
        """
        if isinstance(self.content, str):
            return self.content
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, str):
                parts.append(block)
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "".join(parts)

    def pretty_repr(self, html: bool = False) -> str:
        """A titled, human-readable rendering of the message.

        Example:
            >>> print(HumanMessage("Hello").pretty_repr().splitlines()[-1])
            Hello
        """
        title = _title_bar(self.type.title() + " Message", bold=html)
        if self.name is not None:
            title += f"\nName: {self.name}"
        return f"{title}\n\n{self.content}"

    def pretty_print(self) -> None:
        """Print :meth:`pretty_repr`.

        Example:
            >>> HumanMessage("Hello").pretty_print()  # doctest: +ELLIPSIS
            ===... Human Message ===...
            <BLANKLINE>
            Hello
        """
        print(self.pretty_repr())


def _title_bar(title: str, *, bold: bool) -> str:
    padded = f" {title} "
    left = "=" * ((80 - len(padded)) // 2)
    right = left + "=" if len(padded) % 2 else left
    if bold:
        padded = f"\033[1m{padded}\033[0m"
    return f"{left}{padded}{right}"


class HumanMessage(BaseMessage):
    """A message from the user.

    Example:
        >>> HumanMessage("What is 2 + 2?").type
        'human'
    """

    type: Literal["human"] = "human"

    if TYPE_CHECKING:  # pydantic's dataclass_transform would hide the inherited signature

        def __init__(self, content: Content | None = None, **kwargs: Any) -> None: ...


class SystemMessage(BaseMessage):
    """Instructions for the model, usually first in the list.

    Example:
        >>> SystemMessage("Be brief.").type
        'system'
    """

    type: Literal["system"] = "system"

    if TYPE_CHECKING:  # pydantic's dataclass_transform would hide the inherited signature

        def __init__(self, content: Content | None = None, **kwargs: Any) -> None: ...


_TOOL_CALL_SOURCES = frozenset({"tool_calls", "invalid_tool_calls", "additional_kwargs"})


class AIMessage(BaseMessage):
    """A model's answer: text and/or ``tool_calls``, with optional token ``usage_metadata``.

    Tool calls given without ``"type"`` get ``"type": "tool_call"``; OpenAI-style
    raw calls in ``additional_kwargs["tool_calls"]`` are parsed when no tool
    calls are given directly.

    Example:
        >>> m = AIMessage("", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}])
        >>> m.tool_calls
        [{'name': 'search', 'args': {'q': 'x'}, 'id': 'c1', 'type': 'tool_call'}]
    """

    tool_calls: list[ToolCall] = Field(default_factory=list)
    invalid_tool_calls: list[InvalidToolCall] = Field(default_factory=list)
    usage_metadata: dict[str, Any] | None = None
    type: Literal["ai"] = "ai"

    if TYPE_CHECKING:  # pydantic's dataclass_transform would hide the inherited signature

        def __init__(self, content: Content | None = None, **kwargs: Any) -> None: ...

    @model_validator(mode="before")
    @classmethod
    def _normalize_tool_calls(cls, values: Any) -> Any:
        if not isinstance(values, dict) or values.keys().isdisjoint(_TOOL_CALL_SOURCES):
            # A plain answer (no tool calls, nothing to parse them from): nothing to do,
            # without copying its fields; the common case when a node returns text.
            return values
        values = dict(values)
        given = any(values.get(k) for k in ("tool_calls", "invalid_tool_calls"))
        raw = (values.get("additional_kwargs") or {}).get("tool_calls")
        if not given and isinstance(raw, list):
            values["tool_calls"], values["invalid_tool_calls"] = _parse_raw_tool_calls(raw)
        if values.get("tool_calls"):
            values["tool_calls"] = [_tool_call(tc) for tc in values["tool_calls"]]
        if values.get("invalid_tool_calls"):
            values["invalid_tool_calls"] = [
                {
                    **{k: tc.get(k) for k in ("name", "args", "id", "error")},
                    "type": "invalid_tool_call",
                }
                for tc in values["invalid_tool_calls"]
            ]
        return values

    def pretty_repr(self, html: bool = False) -> str:
        """The base rendering followed by the tool calls and their arguments.

        Example:
            >>> m = AIMessage("", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}])
            >>> print(m.pretty_repr().split("\\n", 1)[1])
            Tool Calls:
              search (c1)
             Call ID: c1
              Args:
                q: x
        """
        lines: list[str] = []
        for heading, calls in (
            ("Tool Calls:", list(self.tool_calls)),
            ("Invalid Tool Calls:", list(self.invalid_tool_calls)),
        ):
            if calls:
                lines.append(heading)
                for call in calls:
                    lines.extend(_describe_call(dict(call)))
        base = super().pretty_repr(html=html)
        return (base.strip() + "\n" + "\n".join(lines)).strip()


def _tool_call(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"a tool call must be a dict with name, args and id, got {raw!r}")
    missing = [k for k in ("name", "args", "id") if k not in raw]
    if missing:
        raise ValueError(f"tool call {raw!r} lacks {', '.join(missing)}; give name, args and id")
    return {"name": raw["name"], "args": raw["args"], "id": raw["id"], "type": "tool_call"}


def _parse_raw_tool_calls(raw: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    valid: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for call in raw:
        if not isinstance(call, dict) or "function" not in call:
            continue
        name = call["function"].get("name")
        arguments = call["function"].get("arguments")
        try:
            args = json.loads(arguments)
        except (TypeError, json.JSONDecodeError):
            invalid.append({"name": name, "args": arguments, "id": call.get("id"), "error": None})
            continue
        valid.append({"name": name or "", "args": args or {}, "id": call.get("id")})
    return valid, invalid


def _describe_call(call: dict[str, Any]) -> list[str]:
    lines = [f"  {call.get('name', 'Tool')} ({call.get('id')})", f" Call ID: {call.get('id')}"]
    if call.get("error"):
        lines.append(f"  Error: {call.get('error')}")
    lines.append("  Args:")
    args = call.get("args")
    if isinstance(args, str):
        lines.append(f"    {args}")
    elif isinstance(args, dict):
        lines.extend(f"    {key}: {value}" for key, value in args.items())
    return lines


class ToolMessage(BaseMessage):
    """The result of one tool call, linked to it by ``tool_call_id``.

    ``status`` is ``"error"`` when the tool failed; ``artifact`` carries a full
    result that is not meant for the model. Content that is not text is
    turned into text.

    Example:
        >>> ToolMessage(42, tool_call_id="c1").content
        '42'
    """

    tool_call_id: str
    type: Literal["tool"] = "tool"
    artifact: Any = None
    status: Literal["success", "error"] = "success"
    additional_kwargs: dict[Any, Any] = Field(default_factory=dict, repr=False)
    response_metadata: dict[Any, Any] = Field(default_factory=dict, repr=False)

    def __init__(self, content: Any = None, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)

    @model_validator(mode="before")
    @classmethod
    def _coerce_content(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        values = dict(values)
        content = values.get("content")
        if isinstance(content, tuple):
            content = list(content)
        if isinstance(content, list):
            values["content"] = [x if isinstance(x, str | dict) else str(x) for x in content]
        elif content is not None and not isinstance(content, str):
            values["content"] = str(content)
        call_id = values.get("tool_call_id")
        if isinstance(call_id, uuid.UUID | int | float) and not isinstance(call_id, bool):
            values["tool_call_id"] = str(call_id)
        return values


class RemoveMessage(BaseMessage):
    """Returned from a node, deletes the message with this ``id`` from the list.

    ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` clears every message before it.

    Example:
        >>> add_messages([HumanMessage("a", id="1")], [RemoveMessage(id="1")])
        []
    """

    type: Literal["remove"] = "remove"

    def __init__(self, id: str, **kwargs: Any) -> None:
        if kwargs.pop("content", None):
            raise ValueError("RemoveMessage does not support 'content' field.")
        super().__init__("", id=id, **kwargs)


AnyMessage: TypeAlias = Annotated[
    AIMessage | HumanMessage | SystemMessage | ToolMessage,
    Field(discriminator="type"),
]
"""Any message a list of chat messages holds (the union, told apart by ``type``)."""

MessageLikeRepresentation: TypeAlias = (
    BaseMessage | str | tuple[str, Content] | list[Any] | dict[str, Any]
)
"""A message, a string (a human message), a ``(role, content)`` pair or a role dict."""

Messages: TypeAlias = list[MessageLikeRepresentation] | MessageLikeRepresentation
"""What either side of :func:`add_messages` takes: one message-like value or a list."""

_BY_TYPE: dict[str, type[BaseMessage]] = {
    "human": HumanMessage,
    "ai": AIMessage,
    "system": SystemMessage,
    "tool": ToolMessage,
    "remove": RemoveMessage,
}

_ROLES: dict[str, str] = {
    "human": "human",
    "user": "human",
    "ai": "ai",
    "assistant": "ai",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "remove": "remove",
}

# The class names of LangChain's serialized constructor envelope we accept.
_ENVELOPE_NAMES: dict[str, str] = {
    "HumanMessage": "human",
    "HumanMessageChunk": "human",
    "AIMessage": "ai",
    "AIMessageChunk": "ai",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "RemoveMessage": "remove",
}


def _from_role(
    role: str,
    content: Any,
    *,
    name: str | None = None,
    tool_call_id: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    id: str | None = None,
    **extra: Any,
) -> BaseMessage:
    kind = _ROLES.get(role) if isinstance(role, str) else None
    if kind is None:
        raise ValueError(
            f"Unexpected message type: '{role}'. Use one of 'human', 'user', 'ai', "
            "'assistant', 'tool', 'system', or 'developer'."
        )
    kwargs: dict[str, Any] = {}
    if name is not None:
        kwargs["name"] = name
    if tool_call_id is not None:
        kwargs["tool_call_id"] = tool_call_id
    if extra:
        # Unknown keys travel in additional_kwargs, except response_metadata.
        metadata = extra.pop("response_metadata", None)
        if metadata:
            kwargs["response_metadata"] = metadata
        extra.update(extra.pop("additional_kwargs", None) or {})
        kwargs["additional_kwargs"] = extra
    if id is not None:
        kwargs["id"] = id
    if tool_calls is not None:
        kwargs["tool_calls"] = [_from_openai_call(call) for call in tool_calls]
    if kind == "remove":
        return RemoveMessage(**kwargs)
    more = kwargs.get("additional_kwargs", {})
    if kind == "system" and role == "developer":
        kwargs["additional_kwargs"] = {**more, "__openai_role__": "developer"}
    if kind == "tool":
        kwargs["artifact"] = more.pop("artifact", None)
        status = more.pop("status", None)
        if status is not None:
            kwargs["status"] = status
        return ToolMessage(content, **kwargs)
    if kind in ("human", "ai") and (example := more.pop("example", False)):
        kwargs["example"] = example
    cls = _BY_TYPE[kind]
    return cls(content, **kwargs)


def _from_openai_call(call: dict[str, Any]) -> dict[str, Any]:
    if "function" not in call:
        return call
    args = call["function"]["arguments"]
    if isinstance(args, str):
        args = json.loads(args, strict=False)
    return {"name": call["function"]["name"], "args": args, "id": call["id"], "type": "tool_call"}


def _to_message(value: Any) -> BaseMessage:
    if isinstance(value, BaseMessage):
        return value
    if isinstance(value, str):
        return _from_role("human", value)
    if isinstance(value, dict):
        envelope = value.get("kwargs")
        ids = value.get("id")
        if (
            value.get("lc") == 1
            and value.get("type") == "constructor"
            and isinstance(ids, list)
            and ids
            and isinstance(envelope, dict)
            and ids[-1] in _ENVELOPE_NAMES
        ):
            return _to_message({"type": _ENVELOPE_NAMES[ids[-1]], **envelope})
        fields = dict(value)
        try:
            role = fields.pop("role") if "role" in fields else fields.pop("type")
            content = fields.pop("content") or ""
        except KeyError:
            raise ValueError(
                f"Message dict must contain 'role' and 'content' keys, got {value}"
            ) from None
        return _from_role(role, content, **fields)
    if isinstance(value, Sequence):
        try:
            role, content = value
        except ValueError:
            raise NotImplementedError(
                "Message as a sequence must be (role string, template)"
            ) from None
        return _from_role(role, content)
    raise NotImplementedError(f"Unsupported message type: {type(value)}")


def convert_to_messages(messages: Iterable[MessageLikeRepresentation]) -> list[BaseMessage]:
    """Turn strings, ``(role, content)`` pairs and role dicts into message objects.

    Roles ``user``/``human``, ``assistant``/``ai``, ``system``/``developer``
    and ``tool`` are understood; messages pass through unchanged.

    Example:
        >>> pairs = ["hi", ("ai", "yo"), {"role": "system", "content": "s"}]
        >>> [m.type for m in convert_to_messages(pairs)]
        ['human', 'ai', 'system']
    """
    return [_to_message(m) for m in messages]


def message_to_dict(message: BaseMessage) -> dict[str, Any]:
    """``{"type": ..., "data": {...fields}}``, the shape :func:`messages_from_dict` reads.

    Example:
        >>> message_to_dict(HumanMessage("hi"))["type"]
        'human'
    """
    return {"type": message.type, "data": message.model_dump()}


def messages_to_dict(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """:func:`message_to_dict` for each message.

    Example:
        >>> len(messages_to_dict([HumanMessage("a"), AIMessage("b")]))
        2
    """
    return [message_to_dict(m) for m in messages]


def messages_from_dict(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """Rebuild messages written by :func:`messages_to_dict`.

    Example:
        >>> before = [AIMessage("b", id="2")]
        >>> messages_from_dict(messages_to_dict(before)) == before
        True
    """
    rebuilt: list[BaseMessage] = []
    for entry in messages:
        cls = _BY_TYPE.get(entry.get("type", ""))
        if cls is None:
            raise ValueError(
                f"Got unexpected message type: {entry.get('type')!r}; expected one of "
                f"{', '.join(sorted(_BY_TYPE))}"
            )
        rebuilt.append(cls.model_validate(entry["data"]))
    return rebuilt
