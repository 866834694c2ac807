"""LangGraph's API on flowcore's engine: change the imports, keep the code."""

from typing import Any as _Any

from flowcore.compat.langgraph._add_messages import MessagesState, add_messages
from flowcore.compat.langgraph._aliases import Durability, StreamMode, StreamWriter
from flowcore.compat.langgraph._cache import CachePolicy
from flowcore.compat.langgraph._callbacks import (
    GraphCallbackHandler,
    GraphInterruptEvent,
    GraphLifecycleStatus,
    GraphResumeEvent,
)
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
from flowcore.compat.langgraph._chat_models import ask_provider
from flowcore.compat.langgraph._context import get_config, get_stream_writer, interrupt
from flowcore.compat.langgraph._debug_tasks import map_debug_tasks
from flowcore.compat.langgraph._delta import DeltaChannel
from flowcore.compat.langgraph._delta import messages_delta_reducer as _messages_delta_reducer
from flowcore.compat.langgraph._error_handlers import NodeError
from flowcore.compat.langgraph._errors import (
    EmptyChannelError,
    EmptyInputError,
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
    InvalidUpdateError,
    NodeCancelledError,
    NodeInterrupt,
    NodeTimeoutError,
    ParentCommand,
    UnknownInterruptError,
)
from flowcore.compat.langgraph._func import EntrypointGraph, entrypoint, task
from flowcore.compat.langgraph._graph import StateGraph
from flowcore.compat.langgraph._interrupt_options import is_invalid_resume
from flowcore.compat.langgraph._lowlevel import Pregel
from flowcore.compat.langgraph._message_graph import MessageGraph
from flowcore.compat.langgraph._messages import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    convert_to_messages,
    message_to_dict,
    messages_from_dict,
    messages_to_dict,
)
from flowcore.compat.langgraph._node_builder import ChannelWriteEntry, NodeBuilder
from flowcore.compat.langgraph._persistent_dict import PersistentDict
from flowcore.compat.langgraph._prebuilt import AgentState, create_react_agent
from flowcore.compat.langgraph._pregel import CompiledStateGraph
from flowcore.compat.langgraph._pregel_helpers import DEFAULT_RECURSION_LIMIT
from flowcore.compat.langgraph._push import push_message
from flowcore.compat.langgraph._remote import RemoteException, RemoteGraph
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
from flowcore.compat.langgraph._savers_postgres import AsyncPostgresSaver
from flowcore.compat.langgraph._savers_sqlite import AsyncSqliteSaver
from flowcore.compat.langgraph._savers_sync import SqliteSaver
from flowcore.compat.langgraph._state import IsLastStep, RemainingSteps
from flowcore.compat.langgraph._stream_v3 import GraphOutput
from flowcore.compat.langgraph._stream_v3_channel import StreamChannel
from flowcore.compat.langgraph._stream_v3_messages import MessagesTransformer
from flowcore.compat.langgraph._stream_v3_run import (
    AsyncGraphRunStream,
    AsyncSubgraphRunStream,
    GraphRunStream,
    SubgraphRunStream,
)
from flowcore.compat.langgraph._stream_v3_transformers import (
    CheckpointsTransformer,
    CustomTransformer,
    DebugTransformer,
    LifecyclePayload,
    LifecycleTransformer,
    SubgraphStatus,
    SubgraphTransformer,
    TasksTransformer,
    UpdatesTransformer,
    ValuesTransformer,
)
from flowcore.compat.langgraph._stream_v3_types import ProtocolEvent, StreamTransformer
from flowcore.compat.langgraph._tool_node import ToolNode, tools_condition
from flowcore.compat.langgraph._tooling import InjectedState
from flowcore.compat.langgraph._trace_policy import TracePolicy, omit_payload
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
from flowcore.compat.langgraph._warnings import (
    LangGraphDeprecatedSinceV05,
    LangGraphDeprecatedSinceV10,
    LangGraphDeprecatedSinceV11,
    LangGraphDeprecationWarning,
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
    "AsyncGraphRunStream",
    "AsyncPostgresSaver",
    "AsyncSqliteSaver",
    "AsyncSubgraphRunStream",
    "BaseChannel",
    "BaseCheckpointSaver",
    "BaseMessage",
    "BinaryOperatorAggregate",
    "CachePolicy",
    "ChannelWriteEntry",
    "CheckpointTuple",
    "CheckpointsTransformer",
    "Command",
    "CompiledStateGraph",
    "CustomTransformer",
    "DebugTransformer",
    "DeltaChannel",
    "Durability",
    "EmptyChannelError",
    "EmptyInputError",
    "EntrypointGraph",
    "EphemeralValue",
    "ExecutionInfo",
    "GraphCallbackHandler",
    "GraphDrained",
    "GraphInterrupt",
    "GraphInterruptEvent",
    "GraphLifecycleStatus",
    "GraphOutput",
    "GraphRecursionError",
    "GraphResumeEvent",
    "GraphRunStream",
    "HumanMessage",
    "InMemorySaver",
    "InjectedState",
    "Interrupt",
    "InvalidUpdateError",
    "IsLastStep",
    "LangGraphDeprecatedSinceV05",
    "LangGraphDeprecatedSinceV10",
    "LangGraphDeprecatedSinceV11",
    "LangGraphDeprecationWarning",
    "LastValue",
    "LifecyclePayload",
    "LifecycleTransformer",
    "MemorySaver",
    "MessageGraph",
    "MessagesState",
    "MessagesTransformer",
    "NamedBarrierValue",
    "NodeBuilder",
    "NodeCancelledError",
    "NodeError",
    "NodeInterrupt",
    "NodeTimeoutError",
    "Overwrite",
    "ParentCommand",
    "PersistentDict",
    "Pregel",
    "PregelTask",
    "ProtocolEvent",
    "RemainingSteps",
    "RemoteException",
    "RemoteGraph",
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
    "StreamChannel",
    "StreamMode",
    "StreamTransformer",
    "StreamWriter",
    "SubgraphRunStream",
    "SubgraphStatus",
    "SubgraphTransformer",
    "SystemMessage",
    "TasksTransformer",
    "TimeoutPolicy",
    "ToolCall",
    "ToolMessage",
    "ToolNode",
    "ToolRuntime",
    "Topic",
    "TracePolicy",
    "UnknownInterruptError",
    "UntrackedValue",
    "UpdatesTransformer",
    "ValuesTransformer",
    "_messages_delta_reducer",
    "add_messages",
    "ask_provider",
    "convert_to_messages",
    "create_react_agent",
    "entrypoint",
    "get_config",
    "get_runtime",
    "get_stream_writer",
    "interrupt",
    "is_invalid_resume",
    "map_debug_tasks",
    "message_to_dict",
    "messages_from_dict",
    "messages_to_dict",
    "omit_payload",
    "push_message",
    "task",
    "tools_condition",
]


def __getattr__(name: str) -> _Any:
    # ToolRuntime is built on first use: LangChain's tool module is slow to import.
    if name == "ToolRuntime":
        from flowcore.compat.langgraph._tool_stream import tool_runtime_class

        return tool_runtime_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
