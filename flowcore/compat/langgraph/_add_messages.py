"""``add_messages``: LangGraph's message reducer, and ``MessagesState``.

Merges a list of chat messages with new ones by id (a new id appends, a known
id replaces, ``RemoveMessage`` deletes, ``REMOVE_ALL_MESSAGES`` clears), in
flowcore's message classes or LangChain's (see ``_messages_langchain``), with
LangGraph's optional OpenAI-shaped output.
"""

from __future__ import annotations

import operator
import os
import sys
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal, cast, overload

from typing_extensions import TypedDict

from flowcore.compat.langgraph._channels import pure_reducer
from flowcore.compat.langgraph._messages import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    AnyMessage,
    BaseMessage,
    Content,
    Messages,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from flowcore.compat.langgraph._messages_langchain import (
    langchain_family,
    openai_shaped,
    to_langchain,
)

__all__ = ["MessagesState", "add_messages", "fresh_id"]

_LANGCHAIN_MESSAGES = "langchain_core.messages"


@overload
def add_messages(
    left: Messages,
    right: Messages,
    *,
    format: Literal["langchain-openai"] | None = None,
) -> list[BaseMessage]: ...


@overload
def add_messages(
    left: None = None,
    right: None = None,
    *,
    format: Literal["langchain-openai"] | None = None,
) -> Callable[[Messages, Messages], list[BaseMessage]]: ...


def add_messages(
    left: Messages | None = None,
    right: Messages | None = None,
    *,
    format: Literal["langchain-openai"] | None = None,
) -> list[BaseMessage] | Callable[[Messages, Messages], list[BaseMessage]]:
    """Merge ``right`` into ``left`` by message id: the reducer of a messages channel.

    Either side may be one message-like value or a list of them; they are
    coerced to messages (see :func:`convert_to_messages`) and messages without
    an id get a fresh uuid4 id. A right-hand message whose id is already in
    ``left`` replaces it in place, others are appended, ``RemoveMessage(id=...)``
    deletes (an unknown id is a ValueError) and
    ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` drops everything before it.
    Called with neither side, returns a reducer bound to ``format``.

    Args:
        left: The current messages.
        right: The messages to merge in.
        format: ``"langchain-openai"`` rewrites the merged messages the way
            LangGraph does for that format (content blocks in OpenAI's shape,
            ids dropped); ``None`` leaves them as they are.

    Returns:
        A new list; the input lists are not changed (but id-less messages get their ids).

    Raises:
        ValueError: only one side given, a removal of an unknown id, or an unknown format.

    Example:
        >>> merged = add_messages([HumanMessage("hi", id="1")], [AIMessage("hello", id="2")])
        >>> [(m.type, m.content) for m in merged]
        [('human', 'hi'), ('ai', 'hello')]
        >>> add_messages(merged, HumanMessage("hi again", id="1"))[0].content
        'hi again'
    """
    if left is None and right is None:
        return lambda lhs, rhs: _merge(lhs, rhs, format)
    if left is None or right is None:
        received = "left" if left else "right"
        raise ValueError(
            "Must specify non-null arguments for both 'left' and 'right'. Only "
            f"received: '{received}'."
        )
    return _merge(left, right, format)


def _merge(left: Messages, right: Messages, format: str | None) -> list[BaseMessage]:
    lefts = left if isinstance(left, list) else [left]
    rights = right if isinstance(right, list) else [right]
    if format is None and type(left) is list:
        appended = _appended(lefts, rights)
        if appended is not None:
            return appended
    langchain = langchain_family(lefts, rights)
    if langchain is not None:
        olds = to_langchain(lefts, langchain)
        news = to_langchain(rights, langchain)
    else:
        olds = _messages_of(left)
        news = convert_to_messages(rights)
    old_ids = _ids_of(olds)
    clear_at: int | None = None
    for index, message in enumerate(news):
        if message.id is None:
            message.id = fresh_id()
        if message.type == "remove" and message.id == REMOVE_ALL_MESSAGES:
            clear_at = index
    if clear_at is not None:
        return news[clear_at + 1 :]

    new_ids = set(map(_ID, news))
    if (
        len(new_ids) == len(news)
        and new_ids.isdisjoint(old_ids)
        and not any(m.type == "remove" for m in news)
    ):
        # Only new ids: an append. A reducer runs on every step of a growing chat, so
        # this path keeps the per-message work in C (no position map, no Python loop).
        merged = olds + news
    else:
        merged = list(olds)
        position = dict(zip(old_ids, range(len(old_ids)), strict=True))
        doomed: set[str | None] = set()
        for message in news:
            at = position.get(message.id)
            # By type, not class: LangChain's RemoveMessage is one too.
            if message.type == "remove":
                if at is None:
                    raise ValueError(
                        "Attempting to delete a message with an ID that doesn't exist "
                        f"('{message.id}')"
                    )
                doomed.add(message.id)
            elif at is not None:
                # Re-sent after a removal in the same update: it stays, with the new value.
                doomed.discard(message.id)
                merged[at] = message
            else:
                position[message.id] = len(merged)
                merged.append(message)
        if doomed:
            merged = [m for m in merged if m.id not in doomed]

    if format == "langchain-openai":
        if langchain is not None:
            return openai_shaped(merged, langchain)
        return [_openai_shaped(m) for m in merged]
    if format:
        raise ValueError(
            f"Unrecognized format={format!r}. Expected one of 'langchain-openai', None."
        )
    return merged


# Its result depends only on its arguments (the ids it gives are random either way): a
# router's read and its step's fold may share one merge (see BinaryOperatorAggregate).
pure_reducer(add_messages)


_ID = operator.attrgetter("id")
_TYPE = operator.attrgetter("type")
_UUID4 = uuid.uuid4
# The version (4) and variant (RFC 4122) bits of a uuid4, and the bits they replace.
_UUID4_KEEP = 0xFFFFFFFF_FFFF_0FFF_3FFF_FFFFFFFFFFFF
_UUID4_SET = 0x00000000_0000_4000_8000_000000000000


def fresh_id() -> str:
    """A new message id: ``str(uuid.uuid4())``, without building a ``UUID`` object.

    A test that patches ``uuid.uuid4`` (for ids it can predict) gets its own
    ids, as from LangGraph.

    Example:
        >>> import uuid
        >>> uuid.UUID(fresh_id()).version
        4
    """
    if uuid.uuid4 is not _UUID4:
        return str(uuid.uuid4())
    n = int.from_bytes(os.urandom(16)) & _UUID4_KEEP | _UUID4_SET
    return (
        f"{n >> 96:08x}-{(n >> 80) & 0xFFFF:04x}-{(n >> 64) & 0xFFFF:04x}-"
        f"{(n >> 48) & 0xFFFF:04x}-{n & 0xFFFFFFFFFFFF:012x}"
    )


def _appended(lefts: list[Any], rights: list[Any]) -> list[BaseMessage] | None:
    """The merge of a chat's usual step, in O(new) Python steps: flowcore messages that all
    have ids, new messages without ids (each gets a fresh uuid4, so none can replace
    an old one) and no removal. None when the merge is anything else.

    The checks over the old messages (their classes, that each has an id) run in C.
    """
    if not rights:
        return None
    kinds = set(map(type, lefts))
    kinds.update(map(type, rights))
    for kind in kinds:
        if not issubclass(kind, BaseMessage):
            return None  # tuples, dicts or strings to convert, or another family
    langchain = sys.modules.get(_LANGCHAIN_MESSAGES)
    if langchain is not None:
        base = langchain.BaseMessage
        for kind in kinds:
            if issubclass(kind, base):
                return None  # LangChain's family decides (see _messages_langchain)
    if set(map(_ID, rights)) != {None} or None in map(_ID, lefts):
        return None  # a new message with an id may replace one; an old one needs an id
    if len(set(map(id, rights))) != len(rights) or "remove" in map(_TYPE, rights):
        return None  # one object sent twice is merged once
    for message in rights:
        if message.id is None:
            message.id = fresh_id()
    return lefts + rights


def _messages_of(left: Messages) -> list[BaseMessage]:
    """``left`` as a list of messages (the list itself when it already is one).

    Only the caller's own copy is changed, never ``left``.
    """
    if type(left) is list:
        # The classes of the items, not each item: one set built in C for a long chat.
        if all(issubclass(kind, BaseMessage) for kind in set(map(type, left))):
            return cast("list[BaseMessage]", left)
        return convert_to_messages(left)
    return convert_to_messages([left])


def _ids_of(messages: list[BaseMessage]) -> list[str | None]:
    """The messages' ids, after giving a fresh uuid4 id to each message that had none."""
    ids: list[str | None] = list(map(_ID, messages))
    if None in ids:
        for index, message in enumerate(messages):
            if message.id is None:
                message.id = ids[index] = fresh_id()
    return ids


def _openai_shaped(message: BaseMessage) -> BaseMessage:
    """The message after a trip through OpenAI's chat format, as LangGraph's format option does."""
    kwargs: dict[str, Any] = {}
    if message.name is not None:
        kwargs["name"] = message.name
    role = message.additional_kwargs.get("__openai_role__")
    if isinstance(message, SystemMessage) and role:
        kwargs["additional_kwargs"] = {"__openai_role__": role}
    content = _openai_content(message.content)
    if isinstance(message, AIMessage):
        return AIMessage(content, tool_calls=list(message.tool_calls), **kwargs)
    if isinstance(message, ToolMessage):
        return ToolMessage(content, tool_call_id=message.tool_call_id, **kwargs)
    return type(message)(content, **kwargs)


def _openai_content(content: Content) -> Content:
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif item.get("type") == "text" and "text" in item:
            blocks.append({"type": "text", "text": item["text"]})
        elif item.get("type") == "image" and (url := _image_url(item)) is not None:
            blocks.append({"type": "image_url", "image_url": {"url": url}})
        else:
            blocks.append(item)
    if all(block.get("type") == "text" for block in blocks):
        return "\n".join(block["text"] for block in blocks)
    return list(blocks)


def _image_url(block: dict[Any, Any]) -> str | None:
    # Anthropic's {"source": {"type": "base64", ...}} and LangChain's standard image blocks.
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        return f"data:{source.get('media_type')};base64,{source.get('data')}"
    if isinstance(block.get("url"), str):
        return str(block["url"])
    if isinstance(block.get("base64"), str):
        return f"data:{block.get('mime_type')};base64,{block['base64']}"
    return None


class MessagesState(TypedDict):
    """A state schema with one key, ``messages``, merged by :func:`add_messages`.

    Example:
        >>> class State(MessagesState):
        ...     summary: str
        >>> sorted(State.__annotations__)
        ['messages', 'summary']
    """

    messages: Annotated[list[AnyMessage], add_messages]
