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

from flowcore.errors import (
    FlowcoreError,
    GraphDefinitionError,
    GraphRecursionError,
    InvalidInputError,
    InvalidUpdateError,
    NodeError,
    NodeTimeoutError,
    ReferenceResolutionError,
    ReferenceSyntaxError,
    RoutingError,
)
from flowcore.events import (
    CustomEvent,
    DoneEvent,
    Event,
    NodeCancelledEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    RunStartEvent,
    RunStatus,
)
from flowcore.graph import END, START, CompiledGraph, Graph, RetryPolicy, RunStream
from flowcore.refs import Reference, ValueTemplate, extract_references, resolve_references
from flowcore.result import NodeRun, RunResult
from flowcore.scheduler import DEFAULT_RECURSION_LIMIT, NodeContext, RunOptions
from flowcore.state import Reducer, StateSchema, append, merge, replace

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "END",
    "START",
    "CompiledGraph",
    "CustomEvent",
    "DoneEvent",
    "Event",
    "FlowcoreError",
    "Graph",
    "GraphDefinitionError",
    "GraphRecursionError",
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
    "Reducer",
    "Reference",
    "ReferenceResolutionError",
    "ReferenceSyntaxError",
    "RetryPolicy",
    "RoutingError",
    "RunOptions",
    "RunResult",
    "RunStartEvent",
    "RunStatus",
    "RunStream",
    "StateSchema",
    "ValueTemplate",
    "__version__",
    "append",
    "extract_references",
    "merge",
    "replace",
    "resolve_references",
]
