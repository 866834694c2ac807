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
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.jsonschema import schema_problems
from flowcore.blocks.model_calls import CallTally, ask_model, note_tries
from flowcore.blocks.prompting import aparse_json_object, repair_prompt, system_prompt
from flowcore.blocks.templates import TemplateLimits, TemplateRenderError, arender_prompt
from flowcore.budgets.guard import BudgetGuard, BudgetWatch
from flowcore.checkpoint.serde import check_text_and_nesting
from flowcore.errors import (
    BlockConfigurationError,
    BlockDefinitionError,
    BlockError,
    BlockInputError,
    BlockOutputError,
    BlockTimeoutError,
    SerializationError,
    ToolCallError,
)
from flowcore.events import (
    BlockEndEvent,
    BlockStartEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from flowcore.interrupts import interrupt
from flowcore.llm.errors import ProviderError
from flowcore.llm.protocol import LLMProvider
from flowcore.llm.registry import ProviderRegistry
from flowcore.llm.retry import provider_retry_delay
from flowcore.llm.types import LLMRequest, LLMResponse, Message, ToolCall, ToolSpec, Usage
from flowcore.memory.manager import MemoryManager
from flowcore.memory.store import Namespace, Store
from flowcore.sandbox import PythonSandbox, SandboxTimeoutError
from flowcore.scheduler.context import NodeContext
from flowcore.secrets import Secret, conceal_secrets, learn, reveal_secrets
from flowcore.tools.runner import ToolCallFinished, ToolCallStarted, ToolEvent, ToolRunner

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


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, BlockError):
        return exc.retryable
    # Same rule as each model call's own retries: quota and long Retry-After are not retried.
    return provider_retry_delay(exc, 0.0) is not None


def _block_wait(backoff: wait_exponential) -> Callable[[RetryCallState], float]:
    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        pause = float(backoff(state))
        if isinstance(exc, ProviderError):
            # Never sooner than the server's Retry-After.
            return provider_retry_delay(exc, pause) or pause
        return pause

    return wait


def _declared(outputs: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    # Keep only what the block promises; a model's extra keys never reach state.
    props = schema.get("properties") or {}
    if not props or schema.get("additionalProperties") not in (None, False):
        return dict(outputs)
    return {k: v for k, v in outputs.items() if k in props}


def _wrap_secret_outputs(
    block: BlockDefinition, outputs: dict[str, Any], ctx: NodeContext
) -> dict[str, Any]:
    """Outputs the block marks secret, as ``Secret`` objects (their text taught to the redactor)."""
    marked = block.secret_outputs & set(outputs)
    if not marked:
        return outputs
    wrapped = dict(outputs)
    for name in marked:
        value = outputs[name]
        learn(ctx.redactor, value, name=f"{block.id}.{name}")
        if isinstance(value, str):
            wrapped[name] = Secret(value, name=f"{block.id}.{name}")
    return wrapped


def _decision_schema(block: BlockDefinition) -> dict[str, Any]:
    schema = dict(block.output_schema)
    props = dict(schema.get("properties") or {})
    props["branch"] = {"type": "string", "enum": sorted(block.branches or {})}
    schema["properties"] = props
    schema["required"] = sorted({*schema.get("required", ()), "branch"})
    return schema


def _single_key(schema: Mapping[str, Any], default: str) -> str:
    props = list(schema.get("properties") or {})
    return props[0] if len(props) == 1 else default


@dataclass(slots=True)
class _Run:
    """Mutable facts gathered across the attempts of one block execution."""

    block: BlockDefinition
    ctx: NodeContext
    attempt: int = 0
    #: Model calls made so far, over every attempt (failed and repaired ones too).
    tally: CallTally = field(default_factory=CallTally)
    metadata: dict[str, Any] = field(default_factory=dict)
    budget: BudgetWatch | None = None
    #: Tool call ids used so far, over every attempt: a model that repeats one gets a fresh one.
    tool_ids: set[str] = field(default_factory=set)


class BlockExecutor:
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
        run = _Run(block, ctx, budget=watch)
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
            _check_inputs(block, inputs)
            for name in block.secret_inputs & set(inputs):
                learn(ctx.redactor, inputs[name], name=f"{block.id}.{name}")
            outputs = await self._with_retries(run, reveal_secrets(dict(inputs)))
            outputs = _wrap_secret_outputs(block, outputs, ctx)
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

    async def _with_retries(self, run: _Run, inputs: dict[str, Any]) -> dict[str, Any]:
        block = run.block
        problems = schema_problems(inputs, block.input_schema, "inputs")
        if problems:
            raise BlockInputError(block.id, problems)
        retrying = AsyncRetrying(
            stop=stop_after_attempt(block.max_retries + 1),
            wait=_block_wait(wait_exponential(multiplier=self.retry_wait, max=30.0)),
            # Interrupts and cancellation are BaseExceptions: never retried.
            retry=retry_if_exception(_retryable),
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

    async def _run_kind(self, run: _Run, inputs: dict[str, Any]) -> dict[str, Any]:
        block = run.block
        schema = _decision_schema(block) if block.kind == "decision" else block.output_schema
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
        return _declared(raw, schema)

    async def _settle(self, run: _Run) -> None:
        if run.budget is not None and self.budgets is not None:
            await self.budgets.settle(run.budget)

    # ------------------------------------------------------------------ llm
    async def _render(self, block: BlockDefinition, template: str, inputs: dict[str, Any]) -> str:
        # Off the event loop, and stopped (not just abandoned) at the block's timeout.
        try:
            return await arender_prompt(
                template,
                inputs,
                limits=self.template_limits,
                timeout=block.timeout_seconds,
                template_format=block.template_format,
            )
        except TemplateRenderError as exc:
            raise BlockInputError(block.id, [str(exc)], hint=_template_hint(exc)) from None

    def _provider(self, block: BlockDefinition) -> tuple[LLMProvider, str | None]:
        if self.providers is None:
            raise BlockConfigurationError(
                f"block {block.id!r} calls a model, but the executor has no providers; "
                "pass BlockExecutor(providers=ProviderRegistry(...))",
                block=block.id,
            )
        try:
            return self.providers.resolve(block.provider, block.model)
        except LookupError as exc:
            raise BlockConfigurationError(f"block {block.id!r}: {exc}", block=block.id) from None

    async def _run_llm(
        self, run: _Run, inputs: dict[str, Any], schema: Mapping[str, Any]
    ) -> dict[str, Any]:
        block = run.block
        provider, model = self._provider(block)
        assert block.prompt_template is not None
        prompt = await self._render(block, block.prompt_template, inputs)
        run.metadata.update(provider=provider.name, model=model)
        tools = self._offered_tools(block)
        messages: list[Message] = [Message("user", prompt)]
        repaired = False
        rounds = 0
        while True:
            request = LLMRequest(
                messages=tuple(messages),
                model=model,
                system=system_prompt(block, schema),
                temperature=block.temperature,
                max_tokens=block.max_tokens,
                tools=tools,
                response_schema=schema,
            )
            response = await self._ask(run, provider, request)
            if response.tool_calls and tools and rounds < self.max_tool_rounds:
                rounds += 1
                assert self.tools is not None
                # Ids first, so the assistant message and the tool messages agree.
                calls = self.tools.identify(response.tool_calls, run.tool_ids)
                messages.append(Message("assistant", response.text, tool_calls=calls))
                messages.extend(await self._answer_tool_calls(run, calls))
                continue
            try:
                outputs = await aparse_json_object(response.text)
                problems = schema_problems(outputs, schema, "output")
            except ValueError as exc:
                outputs, problems = {}, [f"output: {exc}"]
            if not problems:
                return outputs
            if repaired:
                raise BlockOutputError(block.id, problems)
            # One more try, telling the model what was wrong with its answer.
            repaired = True
            run.metadata["repaired"] = True
            # The answer goes back to the model as text: a lone surrogate in it cannot.
            answer = response.text.encode("utf-8", "replace").decode("utf-8")
            messages.append(Message("assistant", answer))
            messages.append(Message("user", repair_prompt(problems)))

    def _offered_tools(self, block: BlockDefinition) -> tuple[ToolSpec, ...]:
        names = block.metadata.get("tools") or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BlockConfigurationError(
                f"block {block.id!r}: metadata.tools must be a list of tool names",
                block=block.id,
            )
        if names and self.tools is None:
            raise BlockConfigurationError(
                f"block {block.id!r} offers tools {names}, but the executor has no "
                "ToolRunner; pass BlockExecutor(tools=ToolRunner([...]))",
                block=block.id,
            )
        if not names:
            return ()
        assert self.tools is not None
        missing = [n for n in names if not self.tools.has(n)]
        if missing:
            raise BlockConfigurationError(
                f"block {block.id!r} offers tools {missing}, which the executor's ToolRunner "
                "does not have; register them or remove them from metadata.tools",
                block=block.id,
            )
        specs = {s.name: s for s in self.tools.specs()}
        return tuple(specs[n] for n in names)

    async def _ask(self, run: _Run, provider: LLMProvider, request: LLMRequest) -> LLMResponse:
        before_send: Callable[[str | None], Awaitable[None]] | None = None
        guard, watch = self.budgets, run.budget
        if guard is not None and watch is not None:

            async def before_send(model: str | None) -> None:
                # A request that could pass a budget is never sent.
                await guard.check(watch, request, model)

        return await ask_model(
            provider,
            request,
            ctx=run.ctx,
            block_id=run.block.id,
            tally=run.tally,
            stream=self.stream,
            retry_wait=self.retry_wait,
            before_send=before_send,
        )

    # ---------------------------------------------------------------- tools
    def _tool_events(self, ctx: NodeContext) -> Callable[[ToolEvent], None]:
        def forward(event: ToolEvent) -> None:
            if isinstance(event, ToolCallStarted):
                ctx.publish(
                    ToolCallStartEvent,
                    tool_call_id=event.tool_call_id,
                    tool_name=event.tool_name,
                    args=event.args,
                )
            elif isinstance(event, ToolCallFinished):
                ctx.publish(
                    ToolCallResultEvent,
                    tool_call_id=event.tool_call_id,
                    tool_name=event.tool_name,
                    result=event.result,
                    is_error=event.is_error,
                    error_code=event.error_code,
                    safe_message=event.safe_message,
                )

        return forward

    async def _answer_tool_calls(self, run: _Run, calls: tuple[ToolCall, ...]) -> list[Message]:
        assert self.tools is not None
        results = await self.tools.run_many(calls, emit=self._tool_events(run.ctx))
        return [
            Message(
                "tool",
                json.dumps(r.value if r.ok else {"error": r.error_code, "message": r.safe_message}),
                tool_call_id=r.tool_call_id,
            )
            for r in results
        ]

    async def _run_tool(self, run: _Run, inputs: dict[str, Any]) -> dict[str, Any]:
        block = run.block
        assert block.tool is not None
        if self.tools is None or not self.tools.has(block.tool):
            raise BlockConfigurationError(
                f"block {block.id!r} calls tool {block.tool!r}, which is not registered; "
                "add it to the executor's ToolRunner",
                block=block.id,
            )
        # No id: the runner gives each call (each attempt, each pass of a loop) a fresh one.
        call = ToolCall("", block.tool, inputs)
        result = await self.tools.run(call, emit=self._tool_events(run.ctx))
        run.metadata["tool"] = block.tool
        if not result.ok:
            raise ToolCallError(
                block.id, block.tool, result.error_code or "execution", result.safe_message or ""
            )
        return dict(result.value or {})

    # --------------------------------------------------------------- python
    def _code_sandbox(self) -> CodeSandbox:
        if self._sandbox is None:
            self._sandbox = PythonSandbox()
        return self._sandbox

    async def _run_python(self, run: _Run, inputs: dict[str, Any]) -> dict[str, Any]:
        block, ctx = run.block, run.ctx
        assert block.source_code is not None
        user_id = ctx.config.get("user_id")
        user = ctx.config.get("user")
        context = {
            "run_id": ctx.run_id,
            "node": ctx.node,
            "block_id": block.id,
            "block_version": block.version,
            "attempt": run.attempt,
            "user_id": None if user_id is None else str(user_id),
            "user": dict(user) if isinstance(user, Mapping) else {},
            "memory": await self._memory_snapshot(run),
        }
        env = {name: self.environment[name] for name in block.env if name in self.environment}
        for name, value in env.items():
            learn(ctx.redactor, value, name=f"env.{name}")  # most are keys: never shown
        try:
            result = await self._code_sandbox().run(
                block.source_code,
                inputs,
                context,
                network=block.network,
                # The executor's own timeout stops the wait; this one kills the worker.
                timeout=block.timeout_seconds,
                env=env,
            )
        except SandboxTimeoutError:
            raise BlockTimeoutError(block.id, block.timeout_seconds) from None
        run.metadata["isolation"] = result.isolation
        return dict(result.outputs)

    async def _memory_snapshot(self, run: _Run) -> dict[str, Any]:
        # The user's long-term key-values: preferences, then what memory blocks
        # saved (same namespace as theirs); a snapshot, so writes do not flow back.
        user_id = run.ctx.config.get("user_id")
        if self.memory is None or not user_id:
            return {}
        snapshot: dict[str, Any] = {}
        preferences = MemoryManager.preferences_namespace(str(user_id))
        for namespace in (preferences, self._namespace(run)):
            for item in await self.memory.list(namespace):
                snapshot[item.key] = item.value
        return snapshot

    # --------------------------------------------------------------- memory
    def _store(self, block: BlockDefinition) -> Store:
        if self.memory is None:
            raise BlockConfigurationError(
                f"block {block.id!r} uses long-term memory, but the executor has no store; "
                "pass BlockExecutor(memory=InMemoryStore()) or another Store",
                block=block.id,
            )
        return self.memory

    @staticmethod
    def _namespace(run: _Run) -> Namespace:
        user = str(run.ctx.config.get("user_id") or "anonymous")
        raw = run.block.metadata.get("namespace") or ["users", "{user_id}", "memory"]
        if not isinstance(raw, list | tuple) or not all(isinstance(p, str) for p in raw):
            raise BlockConfigurationError(
                f"block {run.block.id!r}: metadata.namespace must be a list of strings, "
                "e.g. ['users', '{user_id}', 'memory']",
                block=run.block.id,
            )
        return tuple(p.replace("{user_id}", user) for p in raw)

    async def _run_memory_query(self, run: _Run, inputs: dict[str, Any]) -> dict[str, Any]:
        store = self._store(run.block)
        query = inputs.get("memory_query", inputs.get("query"))
        limit = run.block.metadata.get("limit", 5)
        namespace = self._namespace(run)
        hits = await store.search(namespace, str(query) if query else None, limit=int(limit))
        run.metadata["namespace"] = list(namespace)
        found = [{"key": h.key, "value": h.value, "score": h.score} for h in hits]
        return {_single_key(run.block.output_schema, "memory_results"): found}

    async def _run_memory_save(self, run: _Run, inputs: dict[str, Any]) -> dict[str, Any]:
        store = self._store(run.block)
        namespace = self._namespace(run)
        if "memory_key" in inputs:
            pairs = {str(inputs["memory_key"]): inputs.get("memory_value")}
        else:
            pairs = dict(inputs)  # no explicit key: remember every input under its name
        for key, value in pairs.items():
            # Long-term memory is storage too: no secret is written there.
            await store.put(namespace, key, conceal_secrets(run.ctx.redactor.redact(value)))
        run.metadata["namespace"] = list(namespace)
        return {_single_key(run.block.output_schema, "saved"): True}

    # ---------------------------------------------------------------- human
    async def _run_human(
        self, run: _Run, inputs: dict[str, Any], schema: Mapping[str, Any]
    ) -> dict[str, Any]:
        block = run.block
        if block.prompt_template is not None:
            question: Any = await self._render(block, block.prompt_template, inputs)
        else:
            question = inputs.get("question", block.description)
        shown = {
            k: Secret(v, name=f"{block.id}.{k}")
            if k in block.secret_inputs and isinstance(v, str)
            else v
            for k, v in inputs.items()
        }
        payload: dict[str, Any] = {
            "block_id": block.id,
            "question": question,
            "inputs": shown,
            "output_schema": dict(schema),
        }
        problems: list[str] = []
        # Each invalid answer asks again (a new interrupt, carrying the problems).
        for _ in range(block.max_retries + 1):
            answer = interrupt(payload)
            outputs = self._answer_outputs(answer, schema)
            problems = schema_problems(outputs, schema, "answer")
            if not problems:
                return _declared(outputs, schema)
            payload = {**payload, "problems": problems}
        error = BlockOutputError(block.id, problems)
        error.retryable = False  # asking the same person again is what the loop did
        raise error

    @staticmethod
    def _answer_outputs(answer: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
        props = list(schema.get("properties") or {})
        if isinstance(answer, Mapping) and (not props or set(answer) & set(props)):
            return dict(answer)
        if len(props) == 1:
            return {props[0]: answer}
        return {"answer": answer}

    async def _run_wait(
        self, run: _Run, inputs: dict[str, Any], schema: Mapping[str, Any]
    ) -> dict[str, Any]:
        seconds = inputs.get("seconds", run.block.metadata.get("seconds"))
        if isinstance(seconds, int | float) and not isinstance(seconds, bool):
            await asyncio.sleep(max(float(seconds), 0.0))
            return {_single_key(schema, "waited"): seconds}
        # No duration: wait for an outside event, delivered as a resume value.
        return await self._run_human(run, inputs, schema)


def _template_hint(exc: TemplateRenderError) -> str:
    """How to fix a template failure: the template, or the limit or input it ran into."""
    where = "prompt_template" if exc.line is None else f"prompt_template (line {exc.line})"
    if "time limit" in exc.cause or "timed out" in exc.cause:
        return (
            f"Fix the block's {where} so it renders sooner, or raise the block's "
            "timeout_seconds (and TemplateLimits.max_seconds)."
        )
    limit = _LIMIT_NAME.search(exc.cause)
    if limit is not None:
        return (
            f"Fix the block's {where}, or raise TemplateLimits.{limit.group(1)} "
            "(BlockExecutor(template_limits=...))."
        )
    if exc.cause.startswith("uses an input the block was not given"):
        return (
            "Wire the missing input into the node and declare it in the block's "
            f"input_schema, or fix the block's {where}."
        )
    return f"Fix the block's {where}."


_LIMIT_NAME = re.compile(r"TemplateLimits\.(\w+)")


def _check_inputs(block: BlockDefinition, inputs: Mapping[str, Any]) -> None:
    """Refuse a block or inputs no model, tool or store can take, before any attempt runs."""
    try:
        # The definition's text reaches prompts, events and stores as much as the inputs do.
        check_text_and_nesting(block.model_dump(exclude_none=True), path="block")
    except SerializationError as exc:
        raise BlockDefinitionError(
            [str(exc).removeprefix("cannot store ")], block=block.id
        ) from None
    if not isinstance(inputs, Mapping):
        raise BlockInputError(
            block.id, [f"inputs: must be a mapping of input names, got {type(inputs).__name__}"]
        )
    try:
        check_text_and_nesting(dict(inputs), path="inputs")
    except SerializationError as exc:
        raise BlockInputError(block.id, [str(exc).removeprefix("cannot store ")]) from None
