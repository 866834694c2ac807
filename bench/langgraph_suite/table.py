"""The reviewed table: which LangGraph module names resolve to what, in the flowcore run.

Every module under ``langgraph`` falls in exactly one of three groups:

* ``REDIRECTS``: a public LangGraph module that ``flowcore.compat.langgraph``
  stands in for. The module the suite imports holds exactly the names listed
  here, each taken from ``flowcore.compat.langgraph``'s public ``__all__``;
  any other name is missing.
* ``LIBRARY_PREFIXES``: modules of the checkpoint library (``langgraph-checkpoint``
  and its Postgres/SQLite backends) that are not LangGraph's runtime and that
  flowcore does not replace. They load for real; a saver or store built on them
  is something flowcore must accept, as a user's would be.
* ``langgraph`` and ``langgraph.checkpoint`` themselves: namespace packages
  with no code, loaded for real so that the library modules under them import.
* ``DATA_MODULES``: private LangGraph modules that hold only literal values
  (``langgraph._internal._constants``: the interned strings LangGraph writes into
  configs, checkpoints and task paths). They load for real, from LangGraph, so a
  test that compares flowcore's output with one of them compares it with
  LangGraph's own value. ``redirect.py`` checks at load that such a module
  defines no function or class and imports no other LangGraph module.
* everything else (``langgraph.pregel``, ``langgraph.channels``, ``langgraph.utils``,
  ``langgraph._internal`` ...): missing. The real module never loads, so
  LangGraph's runtime is never built in the flowcore run.

Example:
    >>> REDIRECTS["langgraph.graph"]
    ('END', 'START', 'MessageGraph', 'MessagesState', 'StateGraph', 'add_messages')
    >>> kind_of("langgraph.checkpoint.serde.jsonplus"), kind_of("langgraph.utils")
    ('library', 'missing')
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "DATA_MODULES",
    "LIBRARY_PREFIXES",
    "REDIRECTS",
    "RUNTIME_DIRS",
    "Kind",
    "is_internal",
    "kind_of",
    "packages",
]

Kind = Literal["redirect", "library", "data", "missing", "package"]

# LangGraph module -> the names of flowcore.compat.langgraph it offers there. Only names
# the real module exports (its __all__, or what it defines when it has none) are listed:
# a name LangGraph has there only by accident of its own imports is not part of its API.
REDIRECTS: dict[str, tuple[str, ...]] = {
    "langgraph.graph": (
        "END",
        "START",
        "MessageGraph",
        "MessagesState",
        "StateGraph",
        "add_messages",
    ),
    "langgraph.graph.state": ("CompiledStateGraph", "StateGraph"),
    "langgraph.channels.delta": ("DeltaChannel",),
    # _messages_delta_reducer is re-exported as `X as X` and is how DeltaChannel's own
    # docstring tells users to merge messages, so it is part of the API despite the underscore.
    "langgraph.graph.message": (
        "REMOVE_ALL_MESSAGES",
        "MessageGraph",
        "MessagesState",
        "_messages_delta_reducer",
        "add_messages",
        "push_message",
    ),
    "langgraph.types": (
        "CachePolicy",
        "Command",
        "GraphOutput",
        "Durability",
        "Interrupt",
        "Overwrite",
        "PregelTask",
        "RetryPolicy",
        "Send",
        "StateSnapshot",
        "StateUpdate",
        "StreamMode",
        "StreamWriter",
        "TimeoutPolicy",
        "TracePolicy",
        "interrupt",
        "omit_payload",
    ),
    "langgraph.callbacks": (
        "GraphCallbackHandler",
        "GraphInterruptEvent",
        "GraphLifecycleStatus",
        "GraphResumeEvent",
    ),
    "langgraph.constants": ("END", "START"),
    "langgraph.errors": (
        "EmptyChannelError",
        "EmptyInputError",
        "GraphDrained",
        "GraphInterrupt",
        "GraphRecursionError",
        "InvalidUpdateError",
        "NodeCancelledError",
        "NodeError",
        "NodeInterrupt",
        "NodeTimeoutError",
        "ParentCommand",
        "UnknownInterruptError",
        "is_invalid_resume",
    ),
    "langgraph.config": ("get_config", "get_stream_writer"),
    "langgraph.warnings": (
        "LangGraphDeprecatedSinceV05",
        "LangGraphDeprecatedSinceV10",
        "LangGraphDeprecatedSinceV11",
        "LangGraphDeprecationWarning",
    ),
    "langgraph.func": ("entrypoint", "task"),
    "langgraph.runtime": (
        "DEFAULT_RUNTIME",
        "ExecutionInfo",
        "RunControl",
        "Runtime",
        "ServerInfo",
        "get_runtime",
    ),
    "langgraph.managed": ("IsLastStep", "RemainingSteps"),
    "langgraph.managed.is_last_step": ("IsLastStep", "RemainingSteps"),
    "langgraph.prebuilt": (
        "InjectedState",
        "ToolNode",
        "ToolRuntime",
        "create_react_agent",
        "tools_condition",
    ),
    "langgraph.prebuilt.tool_node": ("InjectedState", "ToolNode", "ToolRuntime", "tools_condition"),
    "langgraph.prebuilt.chat_agent_executor": ("AgentState", "create_react_agent"),
    "langgraph.checkpoint.memory": ("InMemorySaver", "MemorySaver", "PersistentDict"),
    "langgraph.checkpoint.sqlite": ("SqliteSaver",),
    "langgraph.checkpoint.sqlite.aio": ("AsyncSqliteSaver",),
    "langgraph.pregel": ("NodeBuilder", "Pregel"),
    # No __all__: map_debug_tasks is the one function of it LangGraph's tests use.
    "langgraph.pregel.debug": ("map_debug_tasks",),
    "langgraph.pregel.main": ("NodeBuilder", "Pregel"),
    "langgraph.pregel.remote": ("RemoteException", "RemoteGraph"),
    "langgraph.channels": (
        "AnyValue",
        "BaseChannel",
        "BinaryOperatorAggregate",
        "DeltaChannel",
        "EphemeralValue",
        "LastValue",
        "NamedBarrierValue",
        "Topic",
        "UntrackedValue",
    ),
    "langgraph.channels.any_value": ("AnyValue",),
    "langgraph.channels.base": ("BaseChannel",),
    "langgraph.channels.binop": ("BinaryOperatorAggregate",),
    "langgraph.channels.ephemeral_value": ("EphemeralValue",),
    "langgraph.channels.last_value": ("LastValue",),
    "langgraph.channels.named_barrier_value": ("NamedBarrierValue",),
    "langgraph.channels.topic": ("Topic",),
    "langgraph.channels.untracked_value": ("UntrackedValue",),
    # The v3 stream protocol (stream_events(version="v3")): its public modules.
    "langgraph.stream": (
        "AsyncGraphRunStream",
        "AsyncSubgraphRunStream",
        "CheckpointsTransformer",
        "CustomTransformer",
        "DebugTransformer",
        "GraphRunStream",
        "LifecyclePayload",
        "LifecycleTransformer",
        "ProtocolEvent",
        "StreamChannel",
        "StreamTransformer",
        "SubgraphRunStream",
        "SubgraphStatus",
        "SubgraphTransformer",
        "TasksTransformer",
        "UpdatesTransformer",
    ),
    "langgraph.stream.run_stream": (
        "AsyncGraphRunStream",
        "AsyncSubgraphRunStream",
        "GraphRunStream",
        "SubgraphRunStream",
    ),
    "langgraph.stream.stream_channel": ("StreamChannel",),
    "langgraph.stream.transformers": (
        "CheckpointsTransformer",
        "CustomTransformer",
        "DebugTransformer",
        "LifecyclePayload",
        "LifecycleTransformer",
        "MessagesTransformer",
        "SubgraphStatus",
        "SubgraphTransformer",
        "TasksTransformer",
        "UpdatesTransformer",
        "ValuesTransformer",
    ),
}

# The checkpoint library, real in both runs: the saver interface and its data types
# (langgraph.checkpoint.base), serializers, stores, caches, and the Postgres/Redis
# backends that only the external-service fixtures use (skipped in both runs).
LIBRARY_PREFIXES: tuple[str, ...] = (
    "langgraph.checkpoint.base",
    "langgraph.checkpoint.serde",
    "langgraph.checkpoint.postgres",
    "langgraph.store",
    "langgraph.cache",
)

# Private modules of literal values only, loaded for real (see the module docstring).
# Their parent package (`langgraph._internal`, a docstring) loads with them.
DATA_MODULES: tuple[str, ...] = ("langgraph._internal._constants",)

# Folders of the installed langgraph package that hold LangGraph's runtime (the
# `langgraph` and `langgraph-prebuilt` distributions); a module loaded from one of
# them in the flowcore run means the real runtime was built.
RUNTIME_DIRS: tuple[str, ...] = (
    "_internal",
    "channels",
    "func",
    "graph",
    "managed",
    "pregel",
    "prebuilt",
    "stream",
    "utils",
    "callbacks.py",
    "config.py",
    "constants.py",
    "errors.py",
    "runtime.py",
    "types.py",
    "typing.py",
    "version.py",
    "warnings.py",
)


def packages() -> set[str]:
    """The module names that must be packages so that the table's submodules import.

    Example:
        >>> "langgraph.checkpoint" in packages(), "langgraph.graph" in packages()
        (True, True)
    """
    found = {"langgraph"}
    for name in (*REDIRECTS, *DATA_MODULES):
        parts = name.split(".")
        found.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return found


def kind_of(module: str) -> Kind:
    """Which group of the table a ``langgraph`` module name falls in.

    Example:
        >>> kind_of("langgraph.types"), kind_of("langgraph.checkpoint"), kind_of("langgraph.utils")
        ('redirect', 'package', 'missing')
    """
    if module in REDIRECTS:
        return "redirect"
    if module in DATA_MODULES:
        return "data"
    if any(module == p or module.startswith(p + ".") for p in LIBRARY_PREFIXES):
        return "library"
    if module in packages():
        return "package"
    return "missing"


def is_internal(dotted: str) -> bool:
    """Whether a dotted module or ``module.name`` path names something private to LangGraph.

    LangGraph marks its private modules and names with a leading underscore
    (``langgraph._internal``, ``langgraph.pregel._loop``); a dunder is not one.

    Example:
        >>> is_internal("langgraph._internal._constants"), is_internal("langgraph.func.task")
        (True, False)
    """
    return any(p.startswith("_") and not p.startswith("__") for p in dotted.split("."))
