"""The conformance kit's target graphs, rebuilt by name in any process.

Four small flowcore graphs exercise what every ``GraphExecutorPort`` must
handle. Each has a registered name, so an executor that runs graphs in
another process (or on another machine) can rebuild the same graph from
the name alone with :func:`build_kit_graphs`:

``kit.simple``
    Two nodes. ``research`` runs an LLM block (a fresh
    :class:`~flowcore.llm.ScriptedProvider` per execution) that streams
    text, calls the stub tool ``kit_lookup`` and answers in a second model
    call; ``summarize`` writes a summary. Completes with
    :data:`SIMPLE_OUTPUT` in its state.
``kit.slow``
    Node ``wait`` waits until the file named by the input's ``gate`` key
    exists (polling, so it works across processes), then completes with
    ``{"gate_opened": True}``. It gives up after :data:`GATE_TIMEOUT`
    seconds so a broken executor fails instead of hanging.
``kit.failing``
    ``prepare`` succeeds, then ``explode`` raises :class:`KitFailure`.
``kit.pausing``
    ``ask`` calls ``interrupt(...)``; resumed with a value, it stores it as
    ``answer`` and ``finish`` writes ``reply``. It needs a checkpointer that
    every process running the thread shares (a ``SqliteCheckpointer`` on one
    file), since a resume may run in a fresh worker.

:class:`KitTargets` tells the kit which targets to run and what to expect;
:func:`default_targets` gives the compiled graphs, :func:`named_targets`
only their names (for executors that resolve names themselves).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypedDict

from pydantic import BaseModel

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.checkpoint.memory import InMemoryCheckpointer
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.errors import FlowcoreError
from flowcore.graph.builder import Graph
from flowcore.graph.compiled import CompiledGraph
from flowcore.graph.constants import END, START
from flowcore.interrupts import interrupt
from flowcore.llm.registry import ProviderRegistry
from flowcore.llm.scripted import ScriptedProvider
from flowcore.llm.types import LLMResponse, ToolCall, Usage
from flowcore.scheduler.context import NodeContext
from flowcore.tools.runner import Tool, ToolRunner

__all__ = [
    "FAILING",
    "GATE_TIMEOUT",
    "KIT_GRAPH_VERSION",
    "PAUSING",
    "RESUME_VALUE",
    "SIMPLE",
    "SIMPLE_DATA",
    "SIMPLE_OUTPUT",
    "SLOW",
    "KitFailure",
    "KitTarget",
    "KitTargets",
    "build_kit_graphs",
    "default_targets",
    "named_targets",
]

SIMPLE: Final = "kit.simple"
"""Registered name of the two-node graph with text deltas, a tool call and two LLM calls."""
SLOW: Final = "kit.slow"
"""Registered name of the graph that waits for its gate file."""
FAILING: Final = "kit.failing"
"""Registered name of the graph whose second node raises."""
PAUSING: Final = "kit.pausing"
"""Registered name of the graph that interrupts and resumes."""
KIT_GRAPH_VERSION: Final = "kit-1"
"""The version every kit graph is compiled with."""
GATE_TIMEOUT: Final = 30.0
"""Seconds ``kit.slow`` waits for its gate before failing."""
RESUME_VALUE: Final = "kit-approved"
"""The answer the kit resumes ``kit.pausing`` with."""
SIMPLE_OUTPUT: Final[Mapping[str, Any]] = {
    "answer": "forty two",
    "summary": "summary: forty two",
}
"""What ``kit.simple``'s final state contains."""
SIMPLE_DATA: Final[Mapping[str, Any]] = {"kit": "progress", "step": "summarize"}
"""The app data ``kit.simple``'s ``summarize`` node sends (``ctx.emit``), once per run."""


class KitFailure(FlowcoreError, RuntimeError):
    """Raised on purpose by ``kit.failing``'s ``explode`` node.

    Example:
        >>> KitFailure("boom").code
        'kit_failure'
    """

    code = "kit_failure"


@dataclass(frozen=True, slots=True)
class KitTarget:
    """One thing for the kit to run and what a correct run of it looks like.

    ``target`` is passed as ``RunRequest.target`` (a compiled graph, a name,
    or whatever the executor under test accepts). Every event of its runs
    must carry ``graph_name`` and ``graph_version``. ``input`` is the run's
    input (the kit adds ``gate`` for the slow target); ``output`` holds
    key/value pairs the final state of a completed run must contain.

    Example:
        >>> KitTarget("kit.simple", "kit.simple", "kit-1").graph_name
        'kit.simple'
    """

    target: Any
    graph_name: str
    graph_version: str
    input: Mapping[str, Any] | None = None
    output: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KitTargets:
    """The four targets the kit runs, and the value it resumes ``pausing`` with.

    Contracts the kit relies on: ``simple`` completes after at least two
    nodes, with text deltas, one tool call, at least two LLM calls and,
    from inside one of its nodes, one app data event carrying
    ``SIMPLE_DATA`` (``ctx.emit``, or a LangGraph custom stream write);
    ``slow`` does not finish before the file named by its input's ``gate``
    key exists; ``failing`` fails in a node; ``pausing`` interrupts on its
    first run and, resumed on the same thread with ``resume_value``,
    completes with ``pausing.output`` in its state.

    Example:
        >>> named_targets().pausing.output["answer"]
        'kit-approved'
    """

    simple: KitTarget
    slow: KitTarget
    failing: KitTarget
    pausing: KitTarget
    resume_value: Any = RESUME_VALUE


# ------------------------------------------------------------------ simple


class _SimpleState(TypedDict, total=False):
    question: str
    answer: str
    summary: str


class _LookupArgs(BaseModel):
    topic: str


class _LookupResult(BaseModel):
    topic: str
    facts: int


async def _lookup(args: _LookupArgs) -> _LookupResult:
    return _LookupResult(topic=args.topic, facts=3)


_LOOKUP = Tool(
    "kit_lookup",
    "Look a topic up in the kit's stub archive",
    _LookupArgs,
    _LookupResult,
    _lookup,
    allowlist={"topic", "facts"},
)

_RESEARCH = BlockDefinition(
    id="kit_research",
    name="Kit research",
    description="Answer a question, looking facts up first",
    kind="llm",
    input_schema={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
    output_schema={
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    },
    prompt_template="Answer briefly: {{ question }}",
    metadata={"tools": ["kit_lookup"]},
)


def _research_script() -> list[LLMResponse | str]:
    # Two model calls: one streams text and asks for the tool, one answers.
    return [
        LLMResponse(
            text="Let me look that up",
            tool_calls=(ToolCall("kit-call-1", "kit_lookup", {"topic": "the answer"}),),
            usage=Usage(12, 5),
            model="kit-model",
            finish_reason="tool_calls",
        ),
        LLMResponse(
            text='{"answer": "forty two"}',
            usage=Usage(20, 4),
            model="kit-model",
            finish_reason="stop",
        ),
    ]


async def _research(state: Mapping[str, Any], ctx: NodeContext) -> dict[str, Any]:
    # A fresh scripted model per execution keeps the graph reusable for many runs.
    executor = BlockExecutor(
        providers=ProviderRegistry.single(ScriptedProvider(_research_script(), name="kit")),
        tools=ToolRunner([_LOOKUP]),
        retry_wait=0.01,
    )
    outcome = await executor.execute(_RESEARCH, {"question": state.get("question", "")}, ctx)
    return {"answer": outcome.outputs["answer"]}


def _summarize(state: Mapping[str, Any], ctx: NodeContext) -> dict[str, Any]:
    ctx.emit("kit_progress", dict(SIMPLE_DATA))
    return {"summary": f"summary: {state['answer']}"}


def _simple_graph() -> CompiledGraph:
    graph = Graph(_SimpleState)
    graph.add_node("research", _research).add_node("summarize", _summarize)
    graph.add_edge(START, "research").add_edge("research", "summarize")
    graph.add_edge("summarize", END)
    return graph.compile(name=SIMPLE, version=KIT_GRAPH_VERSION)


# -------------------------------------------------------------------- slow


class _SlowState(TypedDict, total=False):
    gate: str
    gate_opened: bool


async def _wait_for_gate(state: Mapping[str, Any]) -> dict[str, Any]:
    gate = state.get("gate")
    if not isinstance(gate, str) or not gate:
        raise KitFailure("kit.slow needs input {'gate': '<path of a file to wait for>'}")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + GATE_TIMEOUT
    # A file rather than an asyncio.Event: the run may be in another process.
    while not await asyncio.to_thread(os.path.exists, gate):
        if loop.time() > deadline:
            raise KitFailure(
                f"kit.slow waited {GATE_TIMEOUT:g} s for its gate file and gave up; the "
                "kit opens the gate only after it received an event from the running run"
            )
        await asyncio.sleep(0.01)
    return {"gate_opened": True}


def _slow_graph() -> CompiledGraph:
    graph = Graph(_SlowState).add_node("wait", _wait_for_gate)
    graph.add_edge(START, "wait").add_edge("wait", END)
    return graph.compile(name=SLOW, version=KIT_GRAPH_VERSION)


# ----------------------------------------------------------------- failing


class _FailingState(TypedDict, total=False):
    prepared: bool


def _prepare(state: Mapping[str, Any]) -> dict[str, Any]:
    return {"prepared": True}


def _explode(state: Mapping[str, Any]) -> dict[str, Any]:
    raise KitFailure("kit.failing failed on purpose in node 'explode'")


def _failing_graph() -> CompiledGraph:
    graph = Graph(_FailingState).add_node("prepare", _prepare).add_node("explode", _explode)
    graph.add_edge(START, "prepare").add_edge("prepare", "explode").add_edge("explode", END)
    return graph.compile(name=FAILING, version=KIT_GRAPH_VERSION)


# ----------------------------------------------------------------- pausing


class _PausingState(TypedDict, total=False):
    draft: str
    answer: Any
    reply: str


def _ask(state: Mapping[str, Any]) -> dict[str, Any]:
    answer = interrupt({"question": "approve the draft?", "draft": state.get("draft", "")})
    return {"answer": answer}


def _finish(state: Mapping[str, Any]) -> dict[str, Any]:
    return {"reply": f"resumed with {state['answer']!r}"}


def _pausing_graph(checkpointer: Checkpointer) -> CompiledGraph:
    graph = Graph(_PausingState).add_node("ask", _ask).add_node("finish", _finish)
    graph.add_edge(START, "ask").add_edge("ask", "finish").add_edge("finish", END)
    return graph.compile(name=PAUSING, version=KIT_GRAPH_VERSION, checkpointer=checkpointer)


# ------------------------------------------------------------------ public


def build_kit_graphs(checkpointer: Checkpointer | None = None) -> dict[str, CompiledGraph]:
    """The kit's graphs by registered name, compiled afresh.

    ``checkpointer`` backs ``kit.pausing``; pass one every process running
    a thread shares (an opened ``SqliteCheckpointer`` on the same file).
    Without one, an in-memory store is used, which only works when the
    resume runs in the same process.

    Example:
        >>> sorted(build_kit_graphs())
        ['kit.failing', 'kit.pausing', 'kit.simple', 'kit.slow']
    """
    store = checkpointer if checkpointer is not None else InMemoryCheckpointer()
    return {
        SIMPLE: _simple_graph(),
        SLOW: _slow_graph(),
        FAILING: _failing_graph(),
        PAUSING: _pausing_graph(store),
    }


def _targets(refs: Mapping[str, Any]) -> KitTargets:
    def target(name: str, **kw: Any) -> KitTarget:
        return KitTarget(refs[name], name, KIT_GRAPH_VERSION, **kw)

    return KitTargets(
        simple=target(SIMPLE, input={"question": "what is the answer?"}, output=SIMPLE_OUTPUT),
        slow=target(SLOW, output={"gate_opened": True}),
        failing=target(FAILING),
        pausing=target(PAUSING, input={"draft": "kit draft"}, output={"answer": RESUME_VALUE}),
        resume_value=RESUME_VALUE,
    )


def default_targets(checkpointer: Checkpointer | None = None) -> KitTargets:
    """The kit's targets as compiled graphs (see :func:`build_kit_graphs`).

    Example:
        >>> default_targets().simple.target.name
        'kit.simple'
    """
    return _targets(build_kit_graphs(checkpointer))


def named_targets() -> KitTargets:
    """The kit's targets by registered name, for executors that resolve names.

    Example:
        >>> named_targets().slow.target
        'kit.slow'
    """
    return _targets({name: name for name in (SIMPLE, SLOW, FAILING, PAUSING)})
