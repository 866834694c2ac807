"""LangGraph's API on flowcore's engine: change the imports, keep the code."""

from flowcore.compat.langgraph._messages import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    MessagesState,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    add_messages,
    convert_to_messages,
    message_to_dict,
    messages_from_dict,
    messages_to_dict,
)

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "AIMessage",
    "AnyMessage",
    "BaseMessage",
    "HumanMessage",
    "MessagesState",
    "RemoveMessage",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "add_messages",
    "convert_to_messages",
    "message_to_dict",
    "messages_from_dict",
    "messages_to_dict",
]
