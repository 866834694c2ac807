"""flowcore: a small, deterministic async graph engine for LLM agent workflows.

Define a state schema, add nodes and edges, compile, run::

    from typing import Annotated, TypedDict
    from flowcore import Graph, START, END, append

    class State(TypedDict):
        log: Annotated[list[str], append]

    graph = Graph(State)
    graph.add_node("hello", lambda s: {"log": ["hello"]})
    graph.add_edge(START, "hello").add_edge("hello", END)
    result = graph.compile().run_sync({})
"""

from flowcore.checkpoint import (
    Checkpoint,
    Checkpointer,
    InMemoryCheckpointer,
    PendingWrite,
    SqliteCheckpointer,
)
from flowcore.errors import (
    BlockConfigurationError,
    BlockError,
    BlockInputError,
    BlockOutputError,
    BlockTimeoutError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStoreError,
    FlowcoreError,
    GraphDefinitionError,
    GraphRecursionError,
    InvalidInputError,
    InvalidUpdateError,
    NodeError,
    NodeTimeoutError,
    ReferenceResolutionError,
    ReferenceSyntaxError,
    ResumeError,
    RoutingError,
    SerializationError,
    ThreadBusyError,
    ToolCallError,
)
from flowcore.events import (
    BlockEndEvent,
    BlockStartEvent,
    CheckpointEvent,
    CustomEvent,
    DoneEvent,
    Event,
    InterruptEvent,
    NodeCancelledEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    RunStartEvent,
    RunStatus,
    TextDeltaEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UsageEvent,
)
from flowcore.graph import END, START, Command, CompiledGraph, Graph, RetryPolicy, RunStream, Send
from flowcore.graph.threads import StateSnapshot
from flowcore.interrupts import Interrupt, Resume, interrupt
from flowcore.refs import Reference, ValueTemplate, extract_references, resolve_references
from flowcore.result import NodeRun, RunResult
from flowcore.scheduler import DEFAULT_RECURSION_LIMIT, NodeContext, RunOptions
from flowcore.scheduler.persistence import Durability
from flowcore.state import Reducer, StateSchema, append, merge, replace

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "END",
    "START",
    "BlockConfigurationError",
    "BlockEndEvent",
    "BlockError",
    "BlockInputError",
    "BlockOutputError",
    "BlockStartEvent",
    "BlockTimeoutError",
    "Checkpoint",
    "CheckpointError",
    "CheckpointEvent",
    "CheckpointNotFoundError",
    "CheckpointStoreError",
    "Checkpointer",
    "Command",
    "CompiledGraph",
    "CustomEvent",
    "DoneEvent",
    "Durability",
    "Event",
    "FlowcoreError",
    "Graph",
    "GraphDefinitionError",
    "GraphRecursionError",
    "InMemoryCheckpointer",
    "Interrupt",
    "InterruptEvent",
    "InvalidInputError",
    "InvalidUpdateError",
    "NodeCancelledEvent",
    "NodeContext",
    "NodeEndEvent",
    "NodeError",
    "NodeErrorEvent",
    "NodeRun",
    "NodeSkippedEvent",
    "NodeStartEvent",
    "NodeTimeoutError",
    "PendingWrite",
    "Reducer",
    "Reference",
    "ReferenceResolutionError",
    "ReferenceSyntaxError",
    "Resume",
    "ResumeError",
    "RetryPolicy",
    "RoutingError",
    "RunOptions",
    "RunResult",
    "RunStartEvent",
    "RunStatus",
    "RunStream",
    "Send",
    "SerializationError",
    "SqliteCheckpointer",
    "StateSchema",
    "StateSnapshot",
    "TextDeltaEvent",
    "ThreadBusyError",
    "ToolCallError",
    "ToolCallResultEvent",
    "ToolCallStartEvent",
    "UsageEvent",
    "ValueTemplate",
    "__version__",
    "append",
    "extract_references",
    "interrupt",
    "merge",
    "replace",
    "resolve_references",
]
