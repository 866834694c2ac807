"""How the executor runs the block kinds that ask someone: a model, a tool, a person.

:class:`AskingKinds` is a mixin of
:class:`~flowcore.blocks.executor.BlockExecutor` with the ``llm`` kind (and a
``decision`` block with a prompt): render the prompt, ask the model, answer
its tool calls for up to ``max_tool_rounds`` rounds, parse and check its
JSON answer and ask once more for a repair; the ``tool`` kind; and the
``human`` and ``wait`` kinds, which pause the run with an interrupt until an
answer comes back.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.execution_rules import BlockRun, declared_outputs, single_key
from flowcore.blocks.jsonschema import schema_problems
from flowcore.blocks.model_calls import ask_model
from flowcore.blocks.prompting import aparse_json_object, repair_prompt, system_prompt
from flowcore.blocks.templates import TemplateLimits, TemplateRenderError, arender_prompt
from flowcore.budgets.guard import BudgetGuard
from flowcore.errors import (
    BlockConfigurationError,
    BlockInputError,
    BlockOutputError,
    ToolCallError,
)
from flowcore.events import ToolCallResultEvent, ToolCallStartEvent
from flowcore.interrupts import interrupt
from flowcore.llm.protocol import LLMProvider
from flowcore.llm.registry import ProviderRegistry
from flowcore.llm.types import LLMRequest, LLMResponse, Message, ToolCall, ToolSpec
from flowcore.scheduler.context import NodeContext
from flowcore.secrets import Secret
from flowcore.tools.runner import ToolCallFinished, ToolCallStarted, ToolEvent, ToolRunner

__all__ = ["AskingKinds"]


class AskingKinds:
    """The llm, decision-by-prompt, tool, human and wait kinds of ``BlockExecutor`` (a mixin).

    Example:
        >>> # outputs = await executor._run_llm(run, inputs, block.output_schema)
    """

    providers: ProviderRegistry | None
    tools: ToolRunner | None
    retry_wait: float
    stream: bool
    max_tool_rounds: int
    template_limits: TemplateLimits
    budgets: BudgetGuard | None

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
        self, run: BlockRun, inputs: dict[str, Any], schema: Mapping[str, Any]
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

    async def _ask(self, run: BlockRun, provider: LLMProvider, request: LLMRequest) -> LLMResponse:
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

    async def _answer_tool_calls(self, run: BlockRun, calls: tuple[ToolCall, ...]) -> list[Message]:
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

    async def _run_tool(self, run: BlockRun, inputs: dict[str, Any]) -> dict[str, Any]:
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

    # ---------------------------------------------------------------- human
    async def _run_human(
        self, run: BlockRun, inputs: dict[str, Any], schema: Mapping[str, Any]
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
                return declared_outputs(outputs, schema)
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
        self, run: BlockRun, inputs: dict[str, Any], schema: Mapping[str, Any]
    ) -> dict[str, Any]:
        seconds = inputs.get("seconds", run.block.metadata.get("seconds"))
        if isinstance(seconds, int | float) and not isinstance(seconds, bool):
            await asyncio.sleep(max(float(seconds), 0.0))
            return {single_key(schema, "waited"): seconds}
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
