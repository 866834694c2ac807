"""The request and response bodies of the HTTP API, as pydantic models (they make the OpenAPI).

Free-form JSON (a run's input and output, a Pipeline document, a node's
values) is typed ``Any`` / ``dict``; everything the server itself says has
a fixed shape here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from flowcore.blocks.definition import BlockDefinition

__all__ = [
    "AutomateBody",
    "AutomateResult",
    "BlockHit",
    "BlockList",
    "BlockSearch",
    "BlockSearchResult",
    "BlockSource",
    "ChatMessage",
    "CheckpointView",
    "ClarifyAnswer",
    "ClarifyBody",
    "CreateAgentBody",
    "CreateAgentResult",
    "Deleted",
    "ErrorBody",
    "ErrorInfo",
    "ExecutionDetail",
    "ExecutionList",
    "ExecutionNode",
    "ExecutionSummary",
    "GraphInfo",
    "GraphList",
    "GraphTarget",
    "Health",
    "InterruptView",
    "MemoryItemView",
    "MemoryView",
    "NodeView",
    "PipelineIdTarget",
    "PipelineList",
    "PipelineRunBody",
    "PipelineRunResult",
    "PipelineTarget",
    "PlanTarget",
    "ResumeBody",
    "RunCreate",
    "RunCreated",
    "RunDetail",
    "RunList",
    "RunStateView",
    "RunSummary",
    "ThinkerBody",
    "ThreadHistory",
    "Tokens",
    "error_responses",
]

_ID = Field(min_length=1, max_length=200)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorInfo(BaseModel):
    """What went wrong: a stable code, a message saying how to fix it, and each problem."""

    code: str
    message: str
    problems: list[str] = Field(default_factory=list)


class ErrorBody(BaseModel):
    """Every error response: ``{"error": {"code", "message", "problems"}}``."""

    error: ErrorInfo


class Health(BaseModel):
    """``GET /healthz``."""

    status: str


# ------------------------------------------------------------------- runs
class GraphTarget(_Strict):
    """Run a graph registered with the server (``GET /api/graphs``)."""

    graph: str = _ID


class PipelineTarget(_Strict):
    """Run a Pipeline document given inline (see docs/pipelines.md)."""

    pipeline: dict[str, Any]


class PipelineIdTarget(_Strict):
    """Run a pipeline saved with ``POST /api/pipelines``."""

    pipeline_id: str = _ID


class PlanTarget(_Strict):
    """Run a TaskPlan document given inline."""

    plan: dict[str, Any]


class RunCreate(_Strict):
    """``POST /api/runs``: what to run, its input, and optionally the thread to run on."""

    target: GraphTarget | PipelineTarget | PipelineIdTarget | PlanTarget
    input: dict[str, Any] = Field(default_factory=dict)
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)


class RunCreated(BaseModel):
    """A run that was started (it goes on in the background)."""

    run_id: str
    thread_id: str | None
    status: str


class RunSummary(BaseModel):
    """One run in a list."""

    run_id: str
    thread_id: str | None
    target: str
    status: str
    started_at: float
    ended_at: float | None
    input_tokens: int
    output_tokens: int
    continues: str | None = None
    continued_by: str | None = None


class RunList(BaseModel):
    """The caller's runs, newest first."""

    runs: list[RunSummary]


class NodeView(BaseModel):
    """One node of a run: where it is, what went in and out, its tokens."""

    node: str
    status: str
    inputs: Any = None
    outputs: Any = None
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None


class InterruptView(BaseModel):
    """A question the paused run waits on; answer it with ``POST .../resume``."""

    interrupt_id: str
    node: str
    value: Any = None


class RunDetail(RunSummary):
    """One run in full: its graph as Mermaid text, each node, pending questions, result."""

    mermaid: str | None
    nodes: list[NodeView]
    interrupts: list[InterruptView]
    error: str | None
    output: Any = None


class ResumeBody(_Strict):
    """``POST /api/runs/{run_id}/resume``: the answer, and which question it answers."""

    value: Any = None
    interrupt_id: str | None = Field(default=None, min_length=1, max_length=200)


class RunStateView(BaseModel):
    """The saved state of a run's thread at its latest checkpoint."""

    run_id: str
    thread_id: str
    checkpoint_id: str | None
    values: dict[str, Any]
    next: list[str]


class CheckpointView(BaseModel):
    """One checkpoint of a thread."""

    checkpoint_id: str
    parent_id: str | None
    step: int
    created_at: float
    next: list[str]


class ThreadHistory(BaseModel):
    """A thread: the caller's runs on it and its checkpoints, newest first."""

    thread_id: str
    runs: list[RunSummary]
    checkpoints: list[CheckpointView]


class GraphInfo(BaseModel):
    """A graph registered with the server."""

    name: str
    kind: str
    version: str


class GraphList(BaseModel):
    """Every registered graph, by name."""

    graphs: list[GraphInfo]


# ----------------------------------------------------------------- blocks
class BlockList(BaseModel):
    """Blocks (latest versions)."""

    blocks: list[BlockDefinition]


class BlockSearch(_Strict):
    """``POST /api/blocks/search``: hybrid search (meaning and words) over the latest blocks."""

    query: str = Field(min_length=1, max_length=1000)
    limit: int = Field(default=10, ge=1, le=100)


class BlockHit(BaseModel):
    """How one found block ranked: fused score, its place in each search (1 = best)."""

    id: str
    score: float
    fts_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None


class BlockSearchResult(BlockList):
    """Found blocks, best first; ``mode`` says which searches ran (``hybrid`` or ``text``)."""

    mode: str
    hits: list[BlockHit] = Field(default_factory=list)


class BlockSource(BaseModel):
    """A block's code or prompt template."""

    id: str
    version: int
    kind: str
    source: str | None


class Deleted(BaseModel):
    """What a DELETE removed."""

    id: str
    deleted: bool


# -------------------------------------------------------------- pipelines
class PipelineList(BaseModel):
    """Saved Pipeline documents, by id."""

    pipelines: list[dict[str, Any]]


class PipelineRunBody(_Strict):
    """``POST /api/pipeline/run``: a Pipeline document (or a saved one's id) and its input."""

    pipeline: dict[str, Any] | None = None
    pipeline_id: str | None = Field(default=None, min_length=1, max_length=200)
    input: dict[str, Any] = Field(default_factory=dict)


class PipelineRunResult(BaseModel):
    """How a blocking pipeline run ended."""

    run_id: str
    thread_id: str | None
    status: str
    output: Any = None
    error: str | None = None
    interrupts: list[InterruptView]
    input_tokens: int
    output_tokens: int


# ------------------------------------------------------------- executions
class ExecutionNode(BaseModel):
    """One node of a recorded execution."""

    node: str
    status: str
    duration: float
    attempts: int
    outputs: Any = None
    error: str | None
    input_tokens: int
    output_tokens: int


class ExecutionSummary(BaseModel):
    """One recorded run in the run history."""

    run_id: str
    pipeline_id: str
    pipeline_version: str
    thread_id: str | None
    status: str
    started_at: float
    duration: float
    input_tokens: int
    output_tokens: int
    errors: list[str]


class ExecutionList(BaseModel):
    """The caller's recorded runs, newest first."""

    executions: list[ExecutionSummary]


class ExecutionDetail(ExecutionSummary):
    """One recorded run with every node and its final state."""

    nodes: list[ExecutionNode]
    final_state: Any = None


# ----------------------------------------------------------------- memory
class MemoryItemView(BaseModel):
    """One remembered value."""

    namespace: list[str]
    key: str
    value: Any = None


class MemoryView(BaseModel):
    """A user's long-term memory: preferences, and everything else kept for them."""

    user_id: str
    preferences: dict[str, Any]
    items: list[MemoryItemView]


# ---------------------------------------------------------------- thinker
_INTENT = Field(
    min_length=1,
    max_length=4000,
    description="What to automate, in plain words (at most 4000 characters)",
)


class ThinkerBody(BaseModel):
    """Free-form Thinker input (kept for clients written against the 501 placeholders)."""

    model_config = ConfigDict(extra="allow")


class ChatMessage(_Strict):
    """One message of a clarifying conversation."""

    role: Literal["user", "assistant"]
    content: str = Field(min_length=1, max_length=4000)


class ClarifyBody(_Strict):
    """``POST /api/clarify``: start with ``intent`` (or a whole ``messages`` list), or answer.

    Give exactly one of ``intent``, ``messages``, or ``thread_id`` with ``answer``.
    """

    intent: str | None = Field(default=None, min_length=1, max_length=4000)
    messages: list[ChatMessage] | None = Field(default=None, min_length=1, max_length=20)
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)
    answer: str | None = Field(default=None, min_length=1, max_length=4000)


class Tokens(BaseModel):
    """Tokens the Thinker's model read and wrote for one request."""

    input_tokens: int = 0
    output_tokens: int = 0


class ClarifyAnswer(BaseModel):
    """The Clarifier's decision: a question to answer on ``thread_id``, or ready.

    ``status`` is ``question``, ``ready`` or ``failed`` (the model gave no usable
    answer; ``error`` says why).
    """

    thread_id: str
    status: Literal["question", "ready", "failed"]
    ready: bool
    question: str | None = None
    refined_intent: str | None = None
    spec: dict[str, Any] | None = None
    user_messages: int
    error: str | None = None
    tokens: Tokens


class CreateAgentBody(_Strict):
    """``POST /api/create-agent`` (and ``/stream``): the intent to turn into a Pipeline."""

    intent: str = _INTENT


class CreateAgentResult(BaseModel):
    """What the Thinker made: ``pipeline_json`` when ``status`` is ``complete``.

    ``status`` ``failed`` means the model's answers could not be made into a
    valid pipeline; ``log`` and ``error`` say where it stopped.
    """

    pipeline_json: dict[str, Any] | None = None
    status: str
    log: list[str]
    thread_id: str | None = None
    reused: list[str] = Field(default_factory=list)
    created: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    refined_intent: str | None = None
    error: str | None = None
    tokens: Tokens


class AutomateBody(_Strict):
    """``POST /api/automate``: an intent, and the input of the pipeline made for it."""

    intent: str = _INTENT
    input: dict[str, Any] = Field(default_factory=dict)


class AutomateResult(BaseModel):
    """The created pipeline and its run (``run`` is null when it did not run: see ``problems``).

    ``status`` is the run's status, or ``not_run``.
    """

    status: str
    create: CreateAgentResult
    run: PipelineRunResult | None = None
    problems: list[str] = Field(default_factory=list)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries declaring :class:`ErrorBody` for each status.

    Example:
        >>> sorted(error_responses(404, 422))
        [404, 422]
    """
    said = {
        400: "The request cannot be carried out as sent",
        401: "No API key, or not an active one",
        404: "No such item for this API key's user",
        409: "Not allowed in the item's current state",
        413: "The request body is over the size limit",
        422: "The request body or parameters do not validate",
        429: "Too many requests with this key (see Retry-After)",
        501: "Waits for a part of flowcore that does not exist yet",
        503: "The server is stopping",
    }
    return {s: {"model": ErrorBody, "description": said.get(s, "Error")} for s in statuses}
