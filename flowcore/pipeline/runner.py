"""``PipelineRunner``: run a pipeline or task plan the way a product does.

One object holds what every run needs (the block registry, the block
executor, long-term memory, a checkpointer and the run history) and turns
"this JSON, this input, this user" into a finished, recorded run: it checks
the run input against what the pipeline reads, compiles, streams the run's
events to a callback, honours the pipeline's failure policy, and records the
run in the history whatever way it ends. A run that pauses for a human is
resumed later, from another process too, by its thread id alone.

With a ``redactor`` the runner passes it to the engine and to the history
record, and wraps each run input that feeds a block input field marked
secret (``"secret": true``) in a :class:`~flowcore.secrets.Secret`, so the
value never shows in the run's events, checkpoints or history.
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flowcore._shown import shown
from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.store import BlockStore
from flowcore.budgets.limits import BUDGETS_KEY, Budgets
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.checkpoint.serde import check_json_value
from flowcore.errors import InvalidInputError, ResumeError, SerializationError
from flowcore.events import Event
from flowcore.graph.compiled import CompiledGraph
from flowcore.history import RunHistory, RunHistoryError, record_from_result, storable_record
from flowcore.interrupts import Resume
from flowcore.memory.manager import MemoryManager
from flowcore.pipeline.compiler import compile_pipeline, load_pipeline_blocks
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan, as_pipeline, load_definition
from flowcore.refs.resolver import extract_references
from flowcore.result import RunResult
from flowcore.scheduler.observers import TRACING_KEY, RunObserver
from flowcore.secrets import Redactor, Secret

__all__ = ["EventCallback", "PipelineRunner", "check_run_inputs", "check_run_request", "input_keys"]

EventCallback = Callable[[Event], Awaitable[None] | None]
"""Called with every event of a run as it happens (sync or async)."""

_NO_VALUE: Any = object()


def input_keys(pipeline: Pipeline) -> dict[str, list[str]]:
    """Each run-input key the pipeline reads (``<<input.key>>``) and the nodes that read it.

    Example:
        >>> p = Pipeline.from_data({"id": "p", "name": "P", "nodes": [
        ...     {"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}]})
        >>> input_keys(p)
        {'doc': ['n1']}
    """
    keys: dict[str, list[str]] = {}
    for node in pipeline.nodes:
        try:
            refs = extract_references(node.inputs)
        except ValueError:
            continue
        for ref in refs:
            if ref.namespace in ("input", "state") and ref.path:
                readers = keys.setdefault(ref.path[0], [])
                if node.id not in readers:
                    readers.append(node.id)
    return keys


def check_run_inputs(pipeline: Pipeline, inputs: Mapping[str, Any]) -> list[str]:
    """Every problem of ``inputs`` as the run input of ``pipeline``: missing or unknown keys.

    Example:
        >>> p = Pipeline.from_data({"id": "p", "name": "P", "nodes": [
        ...     {"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}]})
        >>> check_run_inputs(p, {})
        ["input 'doc' is missing (read by node n1); pass it, e.g. --input doc=..."]
    """
    wanted = input_keys(pipeline)
    problems = [
        f"input {shown(key)} is missing (read by node {', '.join(readers)}); "
        f"pass it, e.g. --input {key}=..."
        for key, readers in wanted.items()
        if key not in inputs
    ]
    known = ", ".join(sorted(wanted)) or "none"
    problems.extend(
        f"input {shown(key)} is not read by pipeline {shown(pipeline.id)} (it reads: {known}); "
        "remove it or wire it into a node's inputs as <<input."
        + (key if isinstance(key, str) else shown(key))
        + ">>"
        for key in inputs
        if key not in wanted
    )
    return problems


def check_run_request(
    pipeline: Pipeline,
    inputs: Mapping[str, Any] | None,
    *,
    user_id: object = None,
    thread_id: object = None,
) -> dict[str, Any]:
    """The run input as a dict, refused before anything runs if the run could not be recorded.

    Run inputs, the user id and the thread id are stored with the run (history,
    checkpoints), so each must be data those stores hold: plain JSON for the
    inputs (a :class:`~flowcore.secrets.Secret` is stored as a placeholder).
    Raises :class:`~flowcore.errors.InvalidInputError` naming the bad value's path.

    Example:
        >>> p = Pipeline.from_data({"id": "p", "name": "P", "nodes": []})
        >>> check_run_request(p, {"doc": "text"}, user_id="ada")
        {'doc': 'text'}
    """
    where = f"run input of pipeline {shown(pipeline.id)}"
    if inputs is not None and not isinstance(inputs, Mapping):
        raise InvalidInputError(
            f"{where} must be a mapping of input names to values, got {type(inputs).__name__}"
        )
    given = dict(inputs or {})
    for name, value in (("user_id", user_id), ("thread_id", thread_id)):
        if value is not None and (not isinstance(value, str) or not value):
            raise InvalidInputError(
                f"{name} must be a non-empty string or None, got {shown(value)}"
            )
    try:
        plain = {k: v for k, v in given.items() if not isinstance(v, Secret)}
        check_json_value(plain, path="input")
        check_json_value(user_id, path="user_id")
        check_json_value(thread_id, path="thread_id")
    except SerializationError as exc:
        raise InvalidInputError(
            f"{where}: {exc}. Run inputs are stored with the run, so they must be plain JSON "
            "data; nothing ran"
        ) from None
    return given


async def _checkpointed_user(graph: CompiledGraph, thread_id: str) -> str | None:
    """The user a pipeline run on ``thread_id`` started for, as its checkpoint keeps it."""
    snapshot = await graph.get_state(thread_id)
    user = snapshot.values.get("user")
    found = user.get("id") if isinstance(user, Mapping) else None
    return found if isinstance(found, str) and found else None


def _source(definition: Pipeline | TaskPlan) -> dict[str, Any]:
    document: dict[str, Any] = definition.model_dump(mode="json", by_alias=True)
    return document


@dataclass(slots=True)
class PipelineRunner:
    """Compiles, runs, resumes and records pipelines and task plans.

    ``checkpointer`` makes runs resumable (every run gets a thread; a run that
    pauses for a human can be resumed by thread id); ``history`` records
    every run, and lets :meth:`resume` find the definition a thread ran;
    ``tracing`` (e.g. ``flowcore.tracing.enable(provider)``) records every
    run as OpenTelemetry spans.

    Example:
        >>> # runner = PipelineRunner(blocks=store, executor=executor, memory=memory,
        >>> #                         checkpointer=checkpointer, history=history)
        >>> # result = await runner.run(pipeline, {"doc": "..."}, user_id="ada")
        >>> # if result.status == "interrupted":
        >>> #     result = await runner.resume(result.thread_id, "yes")
    """

    blocks: BlockStore
    executor: BlockExecutor
    memory: MemoryManager | None = None
    checkpointer: Checkpointer | None = None
    history: RunHistory | None = None
    redactor: Redactor | None = None
    tracing: RunObserver | None = None

    async def compile(self, definition: Pipeline | TaskPlan) -> CompiledGraph:
        """The engine graph of ``definition`` (raises ``PipelineError`` listing every problem).

        Example:
            >>> # graph = await runner.compile(pipeline)
        """
        return await compile_pipeline(
            as_pipeline(definition),
            self.blocks,
            self.executor,
            memory=self.memory,
            checkpointer=self.checkpointer,
        )

    async def run(
        self,
        definition: Pipeline | TaskPlan,
        inputs: Mapping[str, Any] | None = None,
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
        on_event: EventCallback | None = None,
        recursion_limit: int | None = None,
        budgets: Budgets | Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Run ``definition`` on ``inputs`` for ``user_id`` and record the run.

        Raises ``PipelineError`` (the definition cannot run) or
        :class:`~flowcore.errors.InvalidInputError` (the input does not fit)
        before anything runs. Node failures do not raise: the result says
        ``failed`` and the history has the errors. ``budgets`` caps the run's
        model calls (see :mod:`flowcore.budgets`; the executor's
        ``BudgetGuard`` enforces them).

        Example:
            >>> # result = await runner.run(plan, {"request": "lunch"}, user_id="ada")
        """
        Budgets.from_config({BUDGETS_KEY: budgets})  # bad budgets fail before anything runs
        pipeline = as_pipeline(definition)
        given = check_run_request(pipeline, inputs, user_id=user_id, thread_id=thread_id)
        problems = check_run_inputs(pipeline, given)
        if problems:
            raise InvalidInputError(
                f"run input of pipeline {shown(pipeline.id)}: " + "; ".join(problems)
            )
        graph = await self.compile(pipeline)
        given = await self.guard_inputs(pipeline, given)
        if self.checkpointer is not None and thread_id is None:
            thread_id = f"{pipeline.id}-{uuid.uuid4().hex[:12]}"
        return await self._execute(
            graph,
            pipeline,
            given,
            source=_source(definition),
            user_id=user_id,
            thread_id=thread_id,
            on_event=on_event,
            recursion_limit=recursion_limit,
            budgets=budgets,
        )

    async def guard_inputs(self, pipeline: Pipeline, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """``inputs``, with each one that feeds a block field marked secret wrapped in a ``Secret``.

        A run input feeds a field when a node wires it whole, as
        ``"<<input.key>>"``, into an input its block's schema marks
        ``"secret": true`` (or ``"writeOnly": true``).

        Example:
            >>> # given = await runner.guard_inputs(pipeline, {"api_token": "tok-..."})
        """
        guarded = dict(inputs)
        blocks, _ = await load_pipeline_blocks(pipeline, self.blocks)
        for node in pipeline.nodes:
            block = blocks.get(node.id)
            for field in block.secret_inputs if block is not None else ():
                wired = node.inputs.get(field)
                if not isinstance(wired, str):
                    continue
                refs = extract_references(wired)
                if len(refs) != 1 or refs[0].text.strip() != wired.strip():
                    continue  # not one whole reference: nothing to wrap
                ref = refs[0]
                if ref.namespace == "input" and len(ref.path) == 1:
                    value = guarded.get(ref.path[0])
                    if isinstance(value, str):
                        guarded[ref.path[0]] = Secret(value, name=f"input.{ref.path[0]}")
        return guarded

    async def resume(
        self,
        thread_id: str,
        value: Any = _NO_VALUE,
        *,
        definition: Pipeline | TaskPlan | None = None,
        on_event: EventCallback | None = None,
        recursion_limit: int | None = None,
        budgets: Budgets | Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Continue the run saved on ``thread_id``, answering its pause with ``value``.

        Without ``definition``, the pipeline and user are those of the
        thread's latest recorded run (the runner needs a ``history``). Without
        a history, pass ``definition``: the user is the one the thread's
        checkpoint keeps, so ``save_memory`` saves for the right user.
        Without ``value``, a failed or cancelled run picks up where it
        stopped and nodes whose results were saved are not run again.
        ``budgets`` replaces the thread's budgets (e.g. a raised limit after
        a ``BudgetExceededError``); without it the thread keeps its own.

        Example:
            >>> # result = await runner.resume("lunch-1a2b", {"order": "burrito"})
        """
        Budgets.from_config({BUDGETS_KEY: budgets})
        if self.checkpointer is None:
            raise ResumeError(
                "this runner has no checkpointer, so no run can be resumed; "
                "create it with PipelineRunner(..., checkpointer=...)",
                thread_id=thread_id,
            )
        user_id: str | None = None
        if self.history is not None:
            latest = await self.history.list(thread_id=thread_id, limit=1)
            if latest:
                user_id = latest[0].user_id
                if definition is None and latest[0].source is not None:
                    definition = load_definition(dict(latest[0].source))
        if definition is None:
            raise ResumeError(
                f"no recorded run on thread {shown(thread_id)}; check the id with "
                "'flowcore runs list', or pass the pipeline to resume(definition=...)",
                thread_id=thread_id,
            )
        pipeline = as_pipeline(definition)
        graph = await self.compile(pipeline)
        if user_id is None:
            # No run history to ask: the user load_memory kept in the thread's checkpoint.
            user_id = await _checkpointed_user(graph, thread_id)
        return await self._execute(
            graph,
            pipeline,
            None if value is _NO_VALUE else Resume(value),
            source=_source(definition),
            user_id=user_id,
            thread_id=thread_id,
            on_event=on_event,
            recursion_limit=recursion_limit,
            budgets=budgets,
        )

    async def _execute(
        self,
        graph: CompiledGraph,
        pipeline: Pipeline,
        run_input: dict[str, Any] | Resume | None,
        *,
        source: Mapping[str, Any],
        user_id: str | None,
        thread_id: str | None,
        on_event: EventCallback | None,
        recursion_limit: int | None,
        budgets: Budgets | Mapping[str, Any] | None,
    ) -> RunResult:
        started = time.time()
        config: dict[str, Any] = {"user_id": user_id} if user_id else {}
        if self.tracing is not None:
            config[TRACING_KEY] = self.tracing
        if budgets is not None:
            config[BUDGETS_KEY] = budgets
        async with graph.stream(
            run_input,
            config=config,
            on_error=pipeline.on_error,
            thread_id=thread_id,
            recursion_limit=recursion_limit,
            redactor=self.redactor,
        ) as events:
            async for event in events:
                if on_event is not None:
                    outcome = on_event(event)
                    if inspect.isawaitable(outcome):
                        await outcome
            result = await events.result()
        if self.history is not None:
            record = record_from_result(
                result,
                pipeline_id=pipeline.id,
                pipeline_version=pipeline.version,
                user_id=user_id,
                started_at=started,
                inputs=run_input if isinstance(run_input, dict) else {},
                source=source,
                redactor=self.redactor,
            )
            try:
                try:
                    await self.history.save(record)
                except SerializationError:
                    # A node produced a value the history cannot hold: the run is still
                    # recorded, with that value replaced by a note saying why.
                    await self.history.save(storable_record(record))
            except RunHistoryError as exc:
                raise RunHistoryError(
                    f"run {shown(result.run_id)} of pipeline {shown(pipeline.id)} ended "
                    f"{shown(result.status)}"
                    + (f" on thread {shown(thread_id)}" if thread_id else "")
                    + f", but recording it in the run history failed: {exc}"
                ) from exc
        return result
