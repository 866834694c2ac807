"""``TaskPlan``: seed 000's plan of steps, another way to write a pipeline.

A plan lists steps that each run a stored block. ``depends_on`` says which
steps a step runs after; a decision step's ``branches`` route to the step the
decision names (possibly an earlier one, making a loop bounded by the run's
recursion limit). The plan starts at ``entry_step_id`` and may carry a
:class:`~flowcore.pipeline.schedule.ScheduleSpec`.

:meth:`TaskPlan.to_pipeline` maps a plan onto a :class:`Pipeline` (a step is
a node, a ``depends_on`` entry is an edge), so a plan and the equivalent
pipeline compile to the same engine graph.
"""

from __future__ import annotations

import graphlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from flowcore._shown import shown
from flowcore.blocks.executor import BlockExecutor
from flowcore.blocks.store import BlockStore
from flowcore.checkpoint.protocol import Checkpointer
from flowcore.graph.compiled import CompiledGraph
from flowcore.memory.manager import MemoryManager
from flowcore.pipeline.compiler import compile_pipeline
from flowcore.pipeline.model import (
    Pipeline,
    PipelineEdge,
    PipelineError,
    PipelineNode,
    check_document,
    parse_document,
)
from flowcore.pipeline.schedule import ScheduleSpec

__all__ = ["PlanStep", "TaskPlan", "as_pipeline", "compile_task_plan", "load_definition"]


class PlanStep(BaseModel):
    """One step of a plan: the stored block it runs, what it runs after, where it routes.

    ``step_id`` becomes the node id, so it follows the node id rules (it is
    used in ``<<step_id.field>>`` references). ``branches`` maps a decision's
    branch key to the step it leads to, overriding the block's own branches.

    Example:
        >>> PlanStep(step_id="step_2", block_id="open_uber_eats", depends_on=("step_1",)).depends_on
        ('step_1',)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_id: str
    block_id: str
    block_version: int | None = Field(default=None, ge=1)
    depends_on: tuple[str, ...] = ()
    branches: dict[str, str] | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("step_id")
    @classmethod
    def _check_step_id(cls, value: str) -> str:
        # The step becomes a pipeline node, so the node id rules are the ones to meet.
        try:
            PipelineNode(id=value, block_id=value)
        except ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ValueError(message.replace("node id", "step id", 1)) from None
        return value


class _StructureError(ValueError):
    """The plan's steps do not fit together; carries each problem for ``from_data``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class TaskPlan(BaseModel):
    """A plan of steps over stored blocks, with an entry step and an optional schedule.

    ``name`` defaults to a title made from ``plan_id``. ``memory_keys`` and
    ``on_error`` mean what they mean on a :class:`Pipeline`. Building a plan
    checks that its steps fit together (unique ids, known ``depends_on`` and
    branch targets, an entry step without ``depends_on``, every step
    reachable from the entry step, no ``depends_on`` cycle).

    Example:
        >>> plan = TaskPlan.from_data({
        ...     "plan_id": "lunch_order", "entry_step_id": "step_1", "steps": [
        ...         {"step_id": "step_1", "block_id": "query_memory"},
        ...         {"step_id": "step_2", "block_id": "place_order", "depends_on": ["step_1"]}]})
        >>> plan.name, [e.source for e in plan.to_pipeline().edges]
        ('Lunch order', ['step_1'])
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    plan_id: str = Field(min_length=1)
    name: str = ""
    user_intent: str = ""
    version: int = Field(default=1, ge=1)
    steps: tuple[PlanStep, ...]
    entry_step_id: str
    schedule: ScheduleSpec | None = None
    memory_keys: tuple[str, ...] = ()
    on_error: Literal["fail_fast", "skip_dependents"] = "skip_dependents"

    @model_validator(mode="before")
    @classmethod
    def _default_name(cls, data: Any) -> Any:
        if (
            isinstance(data, Mapping)
            and not data.get("name")
            and isinstance(data.get("plan_id"), str)
        ):
            return {**data, "name": _title(data["plan_id"])}
        return data

    @model_validator(mode="after")
    def _check_structure(self) -> TaskPlan:
        shapes = [_StepShape(s.step_id, s.depends_on, s.branches or {}) for s in self.steps]
        problems = _structure_problems(shapes, self.entry_step_id)
        if problems:
            raise _StructureError(problems)
        return self

    @classmethod
    def from_data(cls, data: Any) -> TaskPlan:
        """Build a plan from parsed JSON, raising :class:`PipelineError` listing every problem.

        Field problems are named by path (``steps.1.block_version: ...``,
        ``schedule.timezone: ...``); problems of how steps fit together name
        the steps.

        Example:
            >>> TaskPlan.from_data({"plan_id": "p", "entry_step_id": "a",
            ...                     "steps": [{"step_id": "a", "block_id": "summarize"}]}).name
            'P'
        """
        check_document(data, "task plan")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems: list[str] = []
            structure_checked = False
            for err in exc.errors():
                cause = (err.get("ctx") or {}).get("error")
                if isinstance(cause, _StructureError):
                    problems += cause.problems
                    structure_checked = True
                    continue
                where = ".".join(str(p) for p in err["loc"]) or "plan"
                problems.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
            if not structure_checked:
                # Field errors stop pydantic before the structure check; run it on the raw
                # data so a single report still names every problem.
                problems += _raw_structure_problems(data)
            name = data.get("plan_id") if isinstance(data, Mapping) else None
            raise PipelineError(
                problems, pipeline=name if isinstance(name, str) else None
            ) from None

    @classmethod
    def from_json(cls, text: str | bytes) -> TaskPlan:
        """Parse a plan from JSON text.

        Example:
            >>> TaskPlan.from_json('{"plan_id": "p", "entry_step_id": "a", '
            ...                    '"steps": [{"step_id": "a", "block_id": "summarize"}]}').plan_id
            'p'
        """
        return cls.from_data(parse_document(text, "task plan"))

    def to_pipeline(self) -> Pipeline:
        """The same graph written as a :class:`Pipeline`: a node per step, an edge per dependency.

        Example:
            >>> plan = TaskPlan.from_data({"plan_id": "p", "entry_step_id": "a", "steps": [
            ...     {"step_id": "a", "block_id": "summarize"},
            ...     {"step_id": "b", "block_id": "summarize", "depends_on": ["a"]}]})
            >>> [(e.source, e.target) for e in plan.to_pipeline().edges]
            [('a', 'b')]
        """
        nodes = tuple(
            PipelineNode(
                id=step.step_id,
                block_id=step.block_id,
                block_version=step.block_version,
                inputs=dict(step.inputs),
                branches=dict(step.branches) if step.branches is not None else None,
            )
            for step in self.steps
        )
        edges = tuple(
            PipelineEdge.model_validate({"from": dep, "to": step.step_id})
            for step in self.steps
            for dep in step.depends_on
        )
        return Pipeline(
            id=self.plan_id,
            name=self.name,
            version=self.version,
            user_prompt=self.user_intent,
            nodes=nodes,
            edges=edges,
            memory_keys=self.memory_keys,
            on_error=self.on_error,
        )


async def compile_task_plan(
    plan: TaskPlan,
    store: BlockStore,
    executor: BlockExecutor,
    *,
    memory: MemoryManager | None = None,
    checkpointer: Checkpointer | None = None,
) -> CompiledGraph:
    """Compile ``plan`` exactly as its :meth:`TaskPlan.to_pipeline` would compile.

    The graph has one block node per step plus ``load_memory`` and
    ``save_memory``. Raises :class:`PipelineError` listing every problem
    found against the block registry (unknown blocks, bad references, ...).

    Example:
        >>> # graph = await compile_task_plan(plan, store, executor, memory=manager)
        >>> # result = await graph.run({}, config={"user_id": "ada"})
    """
    return await compile_pipeline(
        plan.to_pipeline(), store, executor, memory=memory, checkpointer=checkpointer
    )


def as_pipeline(definition: Pipeline | TaskPlan) -> Pipeline:
    """The pipeline a definition compiles as: a Pipeline itself, or a TaskPlan's ``to_pipeline()``.

    Example:
        >>> as_pipeline(Pipeline.from_data({"id": "p", "name": "P", "nodes": []})).id
        'p'
    """
    return definition if isinstance(definition, Pipeline) else definition.to_pipeline()


def load_definition(data: Any) -> Pipeline | TaskPlan:
    """Read a pipeline or a task plan from parsed JSON (or JSON text), telling them apart.

    A task plan has ``steps`` (and ``plan_id``); a pipeline has ``nodes``.

    Example:
        >>> type(load_definition({"id": "p", "name": "P", "nodes": []})).__name__
        'Pipeline'
    """
    if isinstance(data, str | bytes | bytearray):
        data = parse_document(data, "definition")
    if not isinstance(data, Mapping):
        raise PipelineError(
            [
                f"a definition must be a JSON object, not {type(data).__name__}; write a pipeline "
                '({"id", "name", "nodes"}) or a task plan ({"plan_id", "entry_step_id", "steps"})'
            ]
        )
    is_plan = "steps" in data or "plan_id" in data
    is_pipeline = "nodes" in data
    if is_plan and is_pipeline:
        raise PipelineError(
            [
                "the definition has both 'nodes' (a pipeline) and 'steps' or 'plan_id' (a task "
                "plan); keep the keys of one shape"
            ]
        )
    if is_plan:
        return TaskPlan.from_data(data)
    if is_pipeline:
        return Pipeline.from_data(data)
    keys = ", ".join(shown(k) for k in data) or "none"
    raise PipelineError(
        [
            f"the definition is neither a pipeline (it has no 'nodes') nor a task plan (it has no "
            f"'steps' or 'plan_id'); its keys: {keys}"
        ]
    )


def _title(plan_id: str) -> str:
    words = re.sub(r"[\s_\-]+", " ", plan_id).strip()
    return words[:1].upper() + words[1:] if words else plan_id


@dataclass(frozen=True, slots=True)
class _StepShape:
    """What the structure check needs of a step; ``None`` marks a part that is malformed."""

    step_id: str | None
    depends_on: tuple[str, ...] | None
    branches: Mapping[str, str] | None


def _raw_structure_problems(data: Any) -> list[str]:
    """The structure check on unvalidated data, using only the parts that have the right shape."""
    if not isinstance(data, Mapping):
        return []
    steps = data.get("steps")
    if not isinstance(steps, list | tuple):
        return []
    shapes: list[_StepShape] = []
    for raw in steps:
        if not isinstance(raw, Mapping):
            shapes.append(_StepShape(None, None, None))
            continue
        step_id = raw.get("step_id")
        deps = raw.get("depends_on", ())
        branches = raw.get("branches") or {}
        shapes.append(
            _StepShape(
                step_id if isinstance(step_id, str) else None,
                tuple(deps)
                if isinstance(deps, list | tuple) and all(isinstance(d, str) for d in deps)
                else None,
                branches
                if isinstance(branches, Mapping)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in branches.items())
                else None,
            )
        )
    entry = data.get("entry_step_id")
    return _structure_problems(shapes, entry if isinstance(entry, str) else None)


def _structure_problems(shapes: Sequence[_StepShape], entry: str | None) -> list[str]:
    """Every way the steps fail to fit together; checks that need a malformed part are skipped."""
    if not shapes:
        return ["steps: the plan has no steps; add at least one"]
    problems: list[str] = []
    ids = [s.step_id for s in shapes if s.step_id is not None]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"step id {shown(dup)} is used more than once; step ids must be unique")
    if len(ids) < len(shapes):
        return problems  # without every id, "unknown step" would be guesswork
    known = set(ids)
    listed = ", ".join(dict.fromkeys(ids))
    for shape in shapes:
        for dep in shape.depends_on or ():
            if dep == shape.step_id:
                problems.append(f"step {shown(dep)}: depends_on names the step itself")
            elif dep not in known:
                problems.append(
                    f"step {shown(shape.step_id)}: depends_on names unknown step {shown(dep)} "
                    f"(steps: {listed})"
                )
        for key, target in (shape.branches or {}).items():
            if target not in known:
                problems.append(
                    f"step {shown(shape.step_id)}: branch {shown(key)} leads to unknown step "
                    f"{shown(target)} "
                    f"(steps: {listed})"
                )
    by_id = {s.step_id: s for s in shapes}
    if entry is not None:
        if entry not in known:
            problems.append(
                f"entry_step_id {shown(entry)} is not a step of this plan; name one of: {listed}"
            )
        elif by_id[entry].depends_on:
            deps = ", ".join(repr(d) for d in by_id[entry].depends_on or ())
            problems.append(
                f"entry step {shown(entry)} has depends_on ({deps}), but the entry step runs "
                "first; "
                "remove its depends_on or make another step the entry step"
            )
    if any(s.depends_on is None or s.branches is None for s in shapes):
        return problems
    problems += _cycle_problems(shapes, known)
    if entry is not None and entry in known:
        reached = _reachable(shapes, entry, known)
        for step_id in dict.fromkeys(ids):
            if step_id not in reached:
                problems.append(
                    f"step {shown(step_id)} is not reachable from the entry step {shown(entry)}; "
                    "list the "
                    "step it runs after in its depends_on, or route to it from a decision "
                    "step's branches"
                )
    return problems


def _cycle_problems(shapes: Sequence[_StepShape], known: set[str]) -> list[str]:
    deps = {
        s.step_id: {d for d in s.depends_on or () if d in known and d != s.step_id} for s in shapes
    }
    try:
        graphlib.TopologicalSorter(deps).prepare()
    except graphlib.CycleError as exc:
        # graphlib lists the cycle in run order; read backwards, each step depends on the next.
        cycle: list[str] = list(reversed(exc.args[1]))
        chain = ", ".join(f"{shown(a)} depends on {shown(b)}" for a, b in pairwise(cycle))
        return [
            f"depends_on forms a cycle: {chain}; break it (to repeat steps, route back to an "
            "earlier step with a decision step's branches)"
        ]
    return []


def _reachable(shapes: Sequence[_StepShape], entry: str, known: set[str]) -> set[str]:
    after: dict[str, set[str]] = {i: set() for i in known}
    for shape in shapes:
        step_id = shape.step_id or ""
        for dep in shape.depends_on or ():
            if dep in known:
                after[dep].add(step_id)
        for target in (shape.branches or {}).values():
            if target in known:
                after.setdefault(step_id, set()).add(target)
    reached = {entry}
    todo = [entry]
    while todo:
        for nxt in after[todo.pop()] - reached:
            reached.add(nxt)
            todo.append(nxt)
    return reached
