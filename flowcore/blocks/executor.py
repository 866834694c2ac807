"""``BlockExecutor``: the one generic function that runs any stored block.

Given a block, its inputs (already resolved by the engine) and the node's
context, the executor checks the inputs against the block's
``input_schema``, runs the block by its ``kind``, checks the result against
the ``output_schema``, and applies the block's retry policy (tenacity) and
per-attempt timeout. It reports what happens as typed events on the run's
stream: ``block_start`` / ``block_end``, ``text_delta`` while a model writes,
``tool_call_start`` / ``tool_call_result`` and one ``usage`` per model call.

Secrets (see :mod:`flowcore.secrets`): :class:`~flowcore.secrets.Secret`
inputs are revealed only here, where the block uses them. The value of an
input field the block marks secret is taught to the run's redactor
(``ctx.redactor``) and shown as ``"[REDACTED]"`` in what the block asks a
human; an output field marked secret is wrapped in a ``Secret`` before it
leaves the block; model text streams through one ``text_stream()`` per call,
so a secret split across deltas is never sent in pieces; what a memory
block saves is scrubbed first.

The executor's entry point, attempts and dispatch by kind live here; the
kinds themselves in :mod:`flowcore.blocks.asking_kinds` (llm, decision,
tool, human, wait) and :mod:`flowcore.blocks.local_kinds` (python, memory);
what one execution holds and checks in :mod:`flowcore.blocks.execution_rules`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from flowcore.blocks.asking_kinds import AskingKinds
from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.execution_rules import (
    BlockRun,
    block_wait,
    check_inputs,
    decision_schema,
    declared_outputs,
    retryable,
    wrap_secret_outputs,
)
from flowcore.blocks.jsonschema import schema_problems
from flowcore.blocks.local_kinds import LocalKinds
from flowcore.blocks.model_calls import note_tries
from flowcore.blocks.templates import TemplateLimits
from flowcore.budgets.guard import BudgetGuard
from flowcore.errors import BlockInputError, BlockOutputError, BlockTimeoutError
from flowcore.events import BlockEndEvent, BlockStartEvent
from flowcore.llm.registry import ProviderRegistry
from flowcore.llm.types import Usage
from flowcore.memory.store import Store
from flowcore.scheduler.context import NodeContext
from flowcore.secrets import learn, reveal_secrets
from flowcore.tools.runner import ToolRunner

__all__ = ["BlockExecutor", "BlockOutcome", "CodeRunResult", "CodeSandbox"]


class CodeRunResult(Protocol):
    """What a sandbox returns for one Python block run."""

    @property
    def outputs(self) -> Mapping[str, Any]:
        """The dict the block's ``execute`` returned."""
        ...

    @property
    def isolation(self) -> str:
        """Which isolation the code really ran under (recorded in run metadata)."""
        ...


class CodeSandbox(Protocol):
    """Runs untrusted Python block source; see :class:`flowcore.sandbox.PythonSandbox`."""

    async def run(
        self,
        source: str,
        inputs: Mapping[str, Any],
        context: Mapping[str, Any],
        *,
        network: bool = False,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> CodeRunResult:
        """Run ``execute(inputs, context)`` from ``source`` and return its outputs.

        ``env`` is the block's whole process environment.
        """
        ...


@dataclass(frozen=True, slots=True)
class BlockOutcome:
    """What one block execution produced.

    ``branch`` is the chosen branch key of a decision block (else None);
    ``metadata`` records how it ran (provider and model, isolation, tool);
    ``usage`` sums every model call of every attempt, failed and repaired
    calls included, and ``model_calls`` counts them.

    Example:
        >>> BlockOutcome("summarize", 1, {"summary": "..."}).outputs["summary"]
        '...'
    """

    block_id: str
    block_version: int
    outputs: Mapping[str, Any]
    branch: str | None = None
    attempts: int = 1
    duration: float = 0.0
    usage: Usage = field(default_factory=Usage)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    model_calls: int = 0


class BlockExecutor(AskingKinds, LocalKinds):
    """Runs any :class:`BlockDefinition`; dependencies are passed in, none are global.

    ``providers`` serves LLM and decision blocks (a block's ``provider`` /
    ``model`` override the registry's defaults); ``tools`` serves tool blocks
    (and LLM blocks whose ``metadata["tools"]`` lists tools the model may
    call); ``memory`` serves memory blocks; ``sandbox`` runs Python blocks.
    ``retry_wait`` is the first backoff between a block's attempts, in
    seconds (doubling each time). ``environment`` is where the variables a
    Python block names in its ``env`` field come from: the executor never
    reads ``os.environ`` itself, so an application that wants blocks to see
    e.g. an API key passes ``environment=os.environ`` (or a narrower dict).
    ``template_limits`` bounds each prompt template render (see
    :class:`~flowcore.blocks.templates.TemplateLimits`); renders run in a
    worker thread and stop at the block's ``timeout_seconds``.

    Example:
        >>> from flowcore.llm import ProviderRegistry, ScriptedProvider
        >>> executor = BlockExecutor(
        ...     providers=ProviderRegistry.single(ScriptedProvider(['{"summary": "short"}'])))
        >>> # outcome = await executor.execute(summarize_block, {"text": "long..."})
    """

    def __init__(
        self,
        *,
        providers: ProviderRegistry | None = None,
        tools: ToolRunner | None = None,
        memory: Store | None = None,
        sandbox: CodeSandbox | None = None,
        retry_wait: float = 0.5,
        stream: bool = True,
        max_tool_rounds: int = 5,
        environment: Mapping[str, str] | None = None,
        template_limits: TemplateLimits | None = None,
        budgets: BudgetGuard | None = None,
    ) -> None:
        self.providers = providers
        self.tools = tools
        self.memory = memory
        self._sandbox = sandbox
        self.retry_wait = retry_wait
        self.stream = stream
        self.max_tool_rounds = max_tool_rounds
        self.environment: Mapping[str, str] = dict(environment or {})
        self.template_limits = template_limits or TemplateLimits()
        self.budgets = budgets

    # ----------------------------------------------------------------- entry
    async def execute(
        self,
        block: BlockDefinition,
        inputs: Mapping[str, Any],
        ctx: NodeContext | None = None,
    ) -> BlockOutcome:
        """Run ``block`` on ``inputs``; return its validated outputs or raise a ``BlockError``.

        ``ctx`` is the node's context (events go to the run's stream); without
        one the block runs standalone and its events are dropped.

        Example:
            >>> # outcome = await executor.execute(block, {"text": "..."}, ctx)
            >>> # outcome.outputs["summary"]
        """
        ctx = ctx or NodeContext(run_id="standalone", node=block.id, graph_name="", superstep=0)
        watch = None
        if self.budgets is not None:
            # The guard counts the usage events this block emits.
            ctx, watch = self.budgets.watch(ctx, block.id, block.budget)
        run = BlockRun(block, ctx, budget=watch)
        ctx.publish(
            BlockStartEvent, block_id=block.id, block_version=block.version, kind=block.kind
        )
        started = time.perf_counter()

        def end(outputs: dict[str, Any] | None, error: Exception | None) -> float:
            duration = time.perf_counter() - started
            ctx.publish(
                BlockEndEvent,
                block_id=block.id,
                block_version=block.version,
                ok=error is None,
                outputs=outputs,
                error=None if error is None else str(error),
                attempts=run.attempt,
                duration=duration,
                metadata=dict(run.metadata),
            )
            return duration

        try:
            check_inputs(block, inputs)
            for name in block.secret_inputs & set(inputs):
                learn(ctx.redactor, inputs[name], name=f"{block.id}.{name}")
            outputs = await self._with_retries(run, reveal_secrets(dict(inputs)))
            outputs = wrap_secret_outputs(block, outputs, ctx)
        except Exception as exc:
            note_tries(exc, run.attempt, run.tally.calls)
            end(None, exc)
            await self._settle(run)
            raise
        duration = end(outputs, None)
        await self._settle(run)
        branch = outputs.get("branch") if block.kind == "decision" else None
        return BlockOutcome(
            block.id,
            block.version,
            outputs,
            branch if isinstance(branch, str) else None,
            run.attempt,
            duration,
            run.tally.usage,
            dict(run.metadata),
            run.tally.calls,
        )

    async def _with_retries(self, run: BlockRun, inputs: dict[str, Any]) -> dict[str, Any]:
        block = run.block
        problems = schema_problems(inputs, block.input_schema, "inputs")
        if problems:
            raise BlockInputError(block.id, problems)
        retrying = AsyncRetrying(
            stop=stop_after_attempt(block.max_retries + 1),
            wait=block_wait(wait_exponential(multiplier=self.retry_wait, max=30.0)),
            # Interrupts and cancellation are BaseExceptions: never retried.
            retry=retry_if_exception(retryable),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                run.attempt += 1
                try:
                    async with asyncio.timeout(block.timeout_seconds):
                        return await self._run_kind(run, inputs)
                except TimeoutError:
                    raise BlockTimeoutError(block.id, block.timeout_seconds) from None
        raise AssertionError("unreachable: tenacity stops by raising")  # pragma: no cover

    async def _run_kind(self, run: BlockRun, inputs: dict[str, Any]) -> dict[str, Any]:
        block = run.block
        schema = decision_schema(block) if block.kind == "decision" else block.output_schema
        kind = block.kind
        if kind == "llm" or (kind == "decision" and block.prompt_template is not None):
            raw = await self._run_llm(run, inputs, schema)
        elif kind in ("python", "decision"):
            raw = await self._run_python(run, inputs)
        elif kind == "tool":
            raw = await self._run_tool(run, inputs)
        elif kind == "memory_query":
            raw = await self._run_memory_query(run, inputs)
        elif kind == "memory_save":
            raw = await self._run_memory_save(run, inputs)
        elif kind == "human":
            return await self._run_human(run, inputs, schema)
        else:
            raw = await self._run_wait(run, inputs, schema)
        problems = schema_problems(raw, schema, "output")
        if problems:
            raise BlockOutputError(block.id, problems)
        return declared_outputs(raw, schema)

    async def _settle(self, run: BlockRun) -> None:
        if run.budget is not None and self.budgets is not None:
            await self.budgets.settle(run.budget)
