"""LangGraph's API on flowcore's engine: change the imports, keep the code."""

from flowcore.compat.langgraph._cache import CachePolicy
from flowcore.compat.langgraph._channel_api import (
    AnyValue,
    BaseChannel,
    BinaryOperatorAggregate,
    EphemeralValue,
    LastValue,
    NamedBarrierValue,
    Topic,
    UntrackedValue,
)
from flowcore.compat.langgraph._context import get_config, get_stream_writer, interrupt
from flowcore.compat.langgraph._delta import DeltaChannel
from flowcore.compat.langgraph._delta import messages_delta_reducer as _messages_delta_reducer
from flowcore.compat.langgraph._errors import (
    EmptyChannelError,
    EmptyInputError,
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
    InvalidUpdateError,
    NodeTimeoutError,
)
from flowcore.compat.langgraph._func import EntrypointGraph, entrypoint, task
from flowcore.compat.langgraph._graph import StateGraph
from flowcore.compat.langgraph._lowlevel import Pregel
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
from flowcore.compat.langgraph._node_builder import ChannelWriteEntry, NodeBuilder
from flowcore.compat.langgraph._persistent_dict import PersistentDict
from flowcore.compat.langgraph._prebuilt import (
    AgentState,
    ToolNode,
    create_react_agent,
    tools_condition,
)
from flowcore.compat.langgraph._pregel import DEFAULT_RECURSION_LIMIT, CompiledStateGraph
from flowcore.compat.langgraph._runtime import (
    DEFAULT_RUNTIME,
    ExecutionInfo,
    RunControl,
    Runtime,
    ServerInfo,
    get_runtime,
)
from flowcore.compat.langgraph._savers import BaseCheckpointSaver, CheckpointTuple
from flowcore.compat.langgraph._savers_memory import InMemorySaver, MemorySaver
from flowcore.compat.langgraph._savers_sqlite import AsyncSqliteSaver
from flowcore.compat.langgraph._savers_sync import SqliteSaver
from flowcore.compat.langgraph._state import IsLastStep, RemainingSteps
from flowcore.compat.langgraph._tooling import InjectedState
from flowcore.compat.langgraph._types import (
    END,
    START,
    Command,
    Interrupt,
    Overwrite,
    PregelTask,
    RetryPolicy,
    Send,
    StateSnapshot,
    StateUpdate,
    TimeoutPolicy,
)

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "DEFAULT_RUNTIME",
    "END",
    "REMOVE_ALL_MESSAGES",
    "START",
    "AIMessage",
    "AgentState",
    "AnyMessage",
    "AnyValue",
    "AsyncSqliteSaver",
    "BaseChannel",
    "BaseCheckpointSaver",
    "BaseMessage",
    "BinaryOperatorAggregate",
    "CachePolicy",
    "ChannelWriteEntry",
    "CheckpointTuple",
    "Command",
    "CompiledStateGraph",
    "DeltaChannel",
    "EmptyChannelError",
    "EmptyInputError",
    "EntrypointGraph",
    "EphemeralValue",
    "ExecutionInfo",
    "GraphDrained",
    "GraphInterrupt",
    "GraphRecursionError",
    "HumanMessage",
    "InMemorySaver",
    "InjectedState",
    "Interrupt",
    "InvalidUpdateError",
    "IsLastStep",
    "LastValue",
    "MemorySaver",
    "MessagesState",
    "NamedBarrierValue",
    "NodeBuilder",
    "NodeTimeoutError",
    "Overwrite",
    "PersistentDict",
    "Pregel",
    "PregelTask",
    "RemainingSteps",
    "RemoveMessage",
    "RetryPolicy",
    "RunControl",
    "Runtime",
    "Send",
    "ServerInfo",
    "SqliteSaver",
    "StateGraph",
    "StateSnapshot",
    "StateUpdate",
    "SystemMessage",
    "TimeoutPolicy",
    "ToolCall",
    "ToolMessage",
    "ToolNode",
    "Topic",
    "UntrackedValue",
    "_messages_delta_reducer",
    "add_messages",
    "convert_to_messages",
    "create_react_agent",
    "entrypoint",
    "get_config",
    "get_runtime",
    "get_stream_writer",
    "interrupt",
    "message_to_dict",
    "messages_from_dict",
    "messages_to_dict",
    "task",
    "tools_condition",
]
