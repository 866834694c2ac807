"""Spec: a TaskPlan (seed 000's steps, depends_on and branches) is refused with every problem
named at once, maps onto a Pipeline, and compiles to the same engine graph as that Pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.graph import CompiledGraph
from flowcore.llm import ProviderRegistry, ScriptedProvider
from flowcore.memory import MemoryManager, SqliteStore
from flowcore.pipeline import (
    Pipeline,
    PipelineError,
    PlanStep,
    ScheduleSpec,
    TaskPlan,
    compile_pipeline,
    compile_task_plan,
    load_definition,
)

# The lunch-order flow of seed 000, in its own spellings.
LUNCH: dict[str, Any] = {
    "plan_id": "lunch_order",
    "user_intent": "Order my lunch from Uber Eats every Tuesday arriving at 1pm",
    "entry_step_id": "recall",
    "steps": [
        {"step_id": "recall", "block_id": "recall_order"},
        {
            "step_id": "check",
            "block_id": "check_previous_order",
            "depends_on": ["recall"],
            "branches": {"has_preference": "reorder", "no_preference": "ask"},
        },
        {"step_id": "reorder", "block_id": "reorder_last", "depends_on": ["check"]},
        {"step_id": "ask", "block_id": "ask_for_items", "depends_on": ["check"]},
        {"step_id": "order", "block_id": "place_order", "depends_on": ["reorder", "ask"]},
    ],
    "schedule": {
        "cron_expression": "0 13 * * TUE",
        "timezone": "America/New_York",
        "human_readable": "every Tuesday at 1pm",
    },
    "memory_keys": ["restaurant"],
}


def llm_block(block_id: str, inputs: list[str], outputs: list[str], prompt: str) -> BlockDefinition:
    return BlockDefinition(
        id=block_id,
        name=block_id.replace("_", " ").title(),
        description=prompt,
        kind="llm",
        input_keys=inputs,
        output_keys=outputs,
        prompt_template=prompt,
    )


BLOCKS = (
    llm_block("recall_order", [], ["memory_results"], "What did I order last time?"),
    BlockDefinition(
        id="check_previous_order",
        name="Check previous order",
        description="Is there a previous order to repeat?",
        kind="decision",
        input_keys=["memory_results"],
        output_keys=["branch"],
        prompt_template="Is this a previous order? {{ memory_results }}",
        # The block's own targets; each plan step routes with its own branches instead.
        branches={"has_preference": "repeat", "no_preference": "question"},
    ),
    llm_block("reorder_last", ["memory_results"], ["items"], "Repeat {{ memory_results }}."),
    llm_block("ask_for_items", [], ["items"], "What would you like?"),
    BlockDefinition(
        id="place_order",
        name="Place order",
        description="Place the order",
        kind="llm",
        # The restaurant is optional: it comes from the user's memory when there is one.
        input_schema={
            "type": "object",
            "properties": {"items": {"type": "array"}, "restaurant": {"type": "string"}},
            "required": ["items"],
        },
        output_keys=["order_confirmation_id"],
        prompt_template="Order {{ items | join(', ') }}"
        "{% if restaurant is defined %} at {{ restaurant }}{% endif %}.",
    ),
    llm_block(
        "add_to_cart",
        ["memory_results"],
        ["cart_contents", "cart_total"],
        "Add {{ memory_results }} to the cart.",
    ),
    llm_block(
        "pay",
        ["cart_contents", "cart_total"],
        ["order_confirmation_id"],
        "Pay {{ cart_total }} for {{ cart_contents | join(', ') }}.",
    ),
)


@pytest.fixture
async def store(block_store: SqliteBlockStore) -> SqliteBlockStore:
    for block in BLOCKS:
        await block_store.save(block)
    return block_store


def plan_problems(data: Any) -> tuple[str, ...]:
    with pytest.raises(PipelineError) as refused:
        TaskPlan.from_data(data)
    return refused.value.problems


def with_steps(*steps: dict[str, Any], entry: str = "a", **extra: Any) -> dict[str, Any]:
    return {"plan_id": "p", "entry_step_id": entry, "steps": list(steps), **extra}


def step(step_id: str, *depends_on: str, **extra: Any) -> dict[str, Any]:
    return {"step_id": step_id, "block_id": "summarize", "depends_on": list(depends_on), **extra}


# ------------------------------------------------------------------ reading a plan


def test_the_seed_000_lunch_plan_reads_in_its_own_spellings() -> None:
    plan = TaskPlan.from_data(LUNCH)

    assert plan.plan_id == "lunch_order"
    assert plan.name == "Lunch order"
    assert plan.entry_step_id == "recall"
    assert plan.steps[1] == PlanStep(
        step_id="check",
        block_id="check_previous_order",
        depends_on=("recall",),
        branches={"has_preference": "reorder", "no_preference": "ask"},
    )
    assert plan.schedule == ScheduleSpec(
        cron_expression="0 13 * * TUE",
        timezone="America/New_York",
        human_readable="every Tuesday at 1pm",
    )
    assert plan.version == 1
    assert plan.on_error == "skip_dependents"


def test_a_plan_round_trips_through_json() -> None:
    plan = TaskPlan.from_data(LUNCH)
    assert TaskPlan.from_json(plan.model_dump_json()) == plan


def test_an_explicit_name_is_kept() -> None:
    assert TaskPlan.from_data({**LUNCH, "name": "Tuesday lunch"}).name == "Tuesday lunch"


# ------------------------------------------------------------------ refusing a plan


def test_a_duplicate_step_id_is_named() -> None:
    assert plan_problems(with_steps(step("a"), step("b", "a"), step("b", "a"))) == (
        "step id 'b' is used more than once; step ids must be unique",
    )


def test_depends_on_an_unknown_step_lists_the_steps() -> None:
    assert plan_problems(with_steps(step("a"), step("b", "a", "ghost"))) == (
        "step 'b': depends_on names unknown step 'ghost' (steps: a, b)",
    )


def test_depends_on_the_step_itself_is_refused() -> None:
    assert plan_problems(with_steps(step("a"), step("b", "a", "b"))) == (
        "step 'b': depends_on names the step itself",
    )


def test_a_branch_to_an_unknown_step_names_the_branch() -> None:
    problems = plan_problems(
        with_steps(step("a", branches={"yes": "b", "no": "nowhere"}), step("b"))
    )
    assert problems == ("step 'a': branch 'no' leads to unknown step 'nowhere' (steps: a, b)",)


def test_an_unknown_entry_step_lists_the_steps() -> None:
    assert plan_problems(with_steps(step("a"), step("b", "a"), entry="start")) == (
        "entry_step_id 'start' is not a step of this plan; name one of: a, b",
    )


def test_an_entry_step_with_depends_on_is_refused() -> None:
    problems = plan_problems(with_steps(step("a", "b"), step("b", "a")))
    assert problems[0] == (
        "entry step 'a' has depends_on ('b'), but the entry step runs first; remove its "
        "depends_on or make another step the entry step"
    )


def test_a_step_not_reachable_from_the_entry_step_is_named() -> None:
    problems = plan_problems(with_steps(step("a"), step("b", "a"), step("c"), step("d", "c")))
    assert problems == tuple(
        f"step {s!r} is not reachable from the entry step 'a'; list the step it runs after in "
        "its depends_on, or route to it from a decision step's branches"
        for s in ("c", "d")
    )


def test_a_step_reached_only_through_a_branch_is_reachable() -> None:
    plan = TaskPlan.from_data(
        with_steps(step("a", branches={"yes": "b", "no": "c"}), step("b"), step("c"))
    )
    assert [s.step_id for s in plan.steps] == ["a", "b", "c"]


def test_a_branch_back_to_an_earlier_step_is_a_loop_not_a_problem() -> None:
    plan = TaskPlan.from_data(
        with_steps(step("a"), step("b", "a", branches={"again": "a", "done": "c"}), step("c"))
    )
    assert plan.steps[1].branches == {"again": "a", "done": "c"}


def test_a_depends_on_cycle_is_refused_with_its_path() -> None:
    problems = plan_problems(with_steps(step("a"), step("b", "a", "c"), step("c", "b")))
    assert problems == (
        "depends_on forms a cycle: 'b' depends on 'c', 'c' depends on 'b'; break it (to repeat "
        "steps, route back to an earlier step with a decision step's branches)",
    )


def test_a_plan_without_steps_is_refused() -> None:
    assert plan_problems(with_steps()) == ("steps: the plan has no steps; add at least one",)


def test_malformed_fields_are_named_by_path() -> None:
    problems = plan_problems(
        {
            "plan_id": "p",
            "steps": [
                {"step_id": "a", "block_id": "summarize", "block_version": 0},
                {"step_id": "1b", "block_id": "summarize", "depends_on": ["a"]},
                {"step_id": "c", "depends_on": ["a"], "inptus": {}},
            ],
        }
    )
    assert problems == (
        "steps.0.block_version: Input should be greater than or equal to 1",
        "steps.1.step_id: step id '1b' must start with a letter and use letters, digits, '_' "
        "or '-' (it is used in <<id.field>> references)",
        "steps.2.block_id: Field required",
        "steps.2.inptus: Extra inputs are not permitted",
        "entry_step_id: Field required",
    )


def test_a_reserved_step_id_is_refused() -> None:
    (problem,) = plan_problems(with_steps(step("load_memory"), entry="load_memory"))
    assert problem == "steps.0.step_id: step id 'load_memory' is reserved; pick another name"


def test_bad_schedule_fields_are_named_by_path() -> None:
    problems = plan_problems(
        {
            **LUNCH,
            "schedule": {
                "cron_expression": "0 13 * * TUESDAY",
                "timezone": "America/NewYork",
                "human_readable": " ",
            },
        }
    )
    assert problems == (
        "schedule.cron_expression: cron expression '0 13 * * TUESDAY' is invalid: day-of-week "
        "field 'TUESDAY': 'TUESDAY' is not a number or a day name (day-of-week allows 0-7 or "
        "SUN-SAT; 0 and 7 are Sunday)",
        "schedule.timezone: unknown timezone 'America/NewYork'; use an IANA timezone name such "
        "as 'Europe/Paris' or 'America/New_York' (did you mean 'America/New_York'?)",
        "schedule.human_readable: human_readable must not be blank; say in words when it runs, "
        "e.g. 'every Tuesday at 13:00'",
    )


def test_field_and_structure_problems_are_reported_together() -> None:
    data = with_steps(
        step("a", block_version=0),
        step("b", "a", "ghost"),
        step("b", "a"),
        step("c", branches={"x": "nowhere"}),
        entry="a",
        schedule={"cron_expression": "0 25 * * *", "human_readable": "daily"},
    )
    with pytest.raises(PipelineError) as refused:
        TaskPlan.from_data(data)

    assert str(refused.value).startswith("pipeline 'p' has 6 problems:")
    assert refused.value.problems == (
        "steps.0.block_version: Input should be greater than or equal to 1",
        "schedule.cron_expression: cron expression '0 25 * * *' is invalid: hour field '25': 25 "
        "is out of range (hour allows 0-23)",
        "step id 'b' is used more than once; step ids must be unique",
        "step 'b': depends_on names unknown step 'ghost' (steps: a, b, c)",
        "step 'c': branch 'x' leads to unknown step 'nowhere' (steps: a, b, c)",
        "step 'c' is not reachable from the entry step 'a'; list the step it runs after in its "
        "depends_on, or route to it from a decision step's branches",
    )


def test_building_a_plan_in_python_checks_the_structure_too() -> None:
    with pytest.raises(ValueError, match="depends_on names unknown step 'ghost'"):
        TaskPlan(
            plan_id="p",
            entry_step_id="a",
            steps=(PlanStep(step_id="a", block_id="x", depends_on=("ghost",)),),
        )


@pytest.mark.parametrize("text", ["{", "[1, 2"])
def test_text_that_is_not_json_is_refused(text: str) -> None:
    with pytest.raises(PipelineError, match="not valid JSON"):
        TaskPlan.from_json(text)


# ------------------------------------------------------------------ to_pipeline


def test_to_pipeline_maps_each_step_to_a_node_and_each_dependency_to_an_edge() -> None:
    plan = TaskPlan.from_data(
        {
            **LUNCH,
            "version": 3,
            "on_error": "fail_fast",
            "steps": [
                {**LUNCH["steps"][0], "block_version": 2, "inputs": {"query": "<<input.q>>"}},
                *LUNCH["steps"][1:],
            ],
        }
    )

    pipeline = plan.to_pipeline()

    assert pipeline.id == "lunch_order"
    assert pipeline.name == "Lunch order"
    assert pipeline.version == 3
    assert pipeline.user_prompt == LUNCH["user_intent"]
    assert pipeline.memory_keys == ("restaurant",)
    assert pipeline.on_error == "fail_fast"
    assert [(n.id, n.block_id, n.block_version) for n in pipeline.nodes] == [
        ("recall", "recall_order", 2),
        ("check", "check_previous_order", None),
        ("reorder", "reorder_last", None),
        ("ask", "ask_for_items", None),
        ("order", "place_order", None),
    ]
    assert pipeline.nodes[0].inputs == {"query": "<<input.q>>"}
    assert pipeline.nodes[1].branches == {"has_preference": "reorder", "no_preference": "ask"}
    assert [n.branches for n in pipeline.nodes[2:]] == [None, None, None]
    assert [(e.source, e.target) for e in pipeline.edges] == [
        ("recall", "check"),
        ("check", "reorder"),
        ("check", "ask"),
        ("reorder", "order"),
        ("ask", "order"),
    ]


# ------------------------------------------------------------------ load_definition


def test_load_definition_tells_a_plan_from_a_pipeline() -> None:
    assert isinstance(load_definition(LUNCH), TaskPlan)
    pipeline = load_definition({"id": "p", "name": "P", "nodes": [{"id": "a", "block_id": "x"}]})
    assert isinstance(pipeline, Pipeline)
    assert isinstance(load_definition(TaskPlan.from_data(LUNCH).model_dump_json()), TaskPlan)


def test_load_definition_reports_the_problems_of_the_shape_it_recognised() -> None:
    with pytest.raises(PipelineError) as refused:
        load_definition({"plan_id": "p", "steps": []})
    assert "entry_step_id: Field required" in refused.value.problems


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"id": "p", "name": "P"},
            "the definition is neither a pipeline (it has no 'nodes') nor a task plan (it has no "
            "'steps' or 'plan_id'); its keys: 'id', 'name'",
        ),
        (
            {"id": "p", "nodes": [], "steps": []},
            "the definition has both 'nodes' (a pipeline) and 'steps' or 'plan_id' (a task plan); "
            "keep the keys of one shape",
        ),
        ([1, 2], "a definition must be a JSON object, not list"),
        ("{nope", "not valid JSON"),
    ],
)
def test_load_definition_refuses_what_is_neither(data: Any, message: str) -> None:
    with pytest.raises(PipelineError) as refused:
        load_definition(data)
    (problem,) = refused.value.problems
    assert problem.startswith(message)


# ------------------------------------------------------------------ compiling and running


def executor_for(model: ScriptedProvider) -> BlockExecutor:
    return BlockExecutor(providers=ProviderRegistry.single(model))


def completed(result: Any) -> list[str]:
    return [r.node for r in result.node_runs if r.status == "completed"]


async def test_a_linear_three_step_plan_accumulates_the_shared_context(
    store: SqliteBlockStore,
) -> None:
    plan = TaskPlan.from_data(
        {
            "plan_id": "quick_lunch",
            "entry_step_id": "step_1",
            "steps": [
                {"step_id": "step_1", "block_id": "recall_order"},
                {"step_id": "step_2", "block_id": "add_to_cart", "depends_on": ["step_1"]},
                {"step_id": "step_3", "block_id": "pay", "depends_on": ["step_2"]},
            ],
        }
    )
    model = ScriptedProvider(
        [
            '{"memory_results": "Chicken Bowl from Chipotle"}',
            '{"cart_contents": ["Chicken Bowl"], "cart_total": "$12.50"}',
            '{"order_confirmation_id": "UE-12345"}',
        ]
    )
    graph = await compile_task_plan(plan, store, executor_for(model))

    result = await graph.run({})

    assert result.status == "completed"
    assert completed(result) == ["load_memory", "step_1", "step_2", "step_3", "save_memory"]
    assert result.state["shared_context"] == {
        "memory_results": "Chicken Bowl from Chipotle",
        "cart_contents": ["Chicken Bowl"],
        "cart_total": "$12.50",
        "order_confirmation_id": "UE-12345",
    }
    # Each step read what the steps before it wrote, through the shared context alone.
    prompts = [r.messages[0].content for r in model.requests]
    assert prompts[1] == "Add Chicken Bowl from Chipotle to the cart."
    assert prompts[2] == "Pay $12.50 for Chicken Bowl."
    assert graph.name == "quick_lunch"


@pytest.mark.parametrize(
    ("branch", "taken", "skipped", "items"),
    [
        ("has_preference", "reorder", "ask", '{"items": ["Chicken Bowl"]}'),
        ("no_preference", "ask", "reorder", '{"items": ["Tacos"]}'),
    ],
)
async def test_a_decision_step_routes_by_its_own_branches(
    store: SqliteBlockStore, branch: str, taken: str, skipped: str, items: str
) -> None:
    model = ScriptedProvider(
        [
            '{"memory_results": "Chicken Bowl"}',
            f'{{"branch": "{branch}"}}',
            items,
            '{"order_confirmation_id": "UE-1"}',
        ]
    )
    graph = await compile_task_plan(TaskPlan.from_data(LUNCH), store, executor_for(model))

    result = await graph.run({})

    assert result.status == "completed"
    assert completed(result) == ["load_memory", "recall", "check", taken, "order", "save_memory"]
    assert [r.node for r in result.node_runs if r.status == "skipped"] == [skipped]
    assert skipped not in result.state["results"]
    expected = "Chicken Bowl" if taken == "reorder" else "Tacos"
    assert model.requests[-1].messages[0].content == f"Order {expected}."
    assert model.remaining == 0


async def test_the_plans_memory_keys_are_loaded_and_saved_for_the_user(
    store: SqliteBlockStore, tmp_path: Path
) -> None:
    model = ScriptedProvider(
        [
            '{"memory_results": "none"}',
            '{"branch": "no_preference"}',
            '{"items": ["Tacos"]}',
            '{"order_confirmation_id": "UE-2"}',
        ]
    )
    async with SqliteStore(tmp_path / "memory.db") as memory_store:
        memory = MemoryManager(memory_store)
        await memory.update_preferences("ada", {"restaurant": "Chipotle"})
        graph = await compile_task_plan(
            TaskPlan.from_data(LUNCH), store, executor_for(model), memory=memory
        )

        result = await graph.run({}, config={"user_id": "ada"})
        (run,) = await memory.history("ada", "lunch_order")

    assert result.status == "completed"
    assert model.requests[-1].messages[0].content == "Order Tacos at Chipotle."
    assert run["run_id"] == result.run_id
    assert run["remembered"] == {"restaurant": "Chipotle"}


def graph_shape(graph: CompiledGraph) -> dict[str, Any]:
    return {
        "nodes": list(graph.nodes),
        "edges": {(e.sources, e.target) for e in graph.edges},
        "routers": {
            (r.source, r.targets, tuple(sorted((r.path_map or {}).items()))) for r in graph.routers
        },
        "version": graph.version,
        "name": graph.name,
    }


async def test_a_plan_and_the_same_pipeline_compile_to_the_same_graph_and_results(
    store: SqliteBlockStore,
) -> None:
    # The lunch plan written by hand as seed 003's Pipeline JSON.
    pipeline = Pipeline.from_data(
        {
            "id": "lunch_order",
            "name": "Lunch order",
            "user_prompt": LUNCH["user_intent"],
            "nodes": [
                {"id": "recall", "block_id": "recall_order"},
                {
                    "id": "check",
                    "block_id": "check_previous_order",
                    "branches": {"has_preference": "reorder", "no_preference": "ask"},
                },
                {"id": "reorder", "block_id": "reorder_last"},
                {"id": "ask", "block_id": "ask_for_items"},
                {"id": "order", "block_id": "place_order"},
            ],
            "edges": [
                {"from": "recall", "to": "check"},
                {"from": "check", "to": "reorder"},
                {"from": "check", "to": "ask"},
                {"from": "reorder", "to": "order"},
                {"from": "ask", "to": "order"},
            ],
            "memory_keys": ["restaurant"],
        }
    )
    plan = TaskPlan.from_data(LUNCH)
    assert plan.to_pipeline() == pipeline

    script = [
        '{"memory_results": "Chicken Bowl"}',
        '{"branch": "has_preference"}',
        '{"items": ["Chicken Bowl"]}',
        '{"order_confirmation_id": "UE-3"}',
    ]
    by_plan_model, by_pipeline_model = ScriptedProvider(script), ScriptedProvider(script)
    by_plan = await compile_task_plan(plan, store, executor_for(by_plan_model))
    by_pipeline = await compile_pipeline(pipeline, store, executor_for(by_pipeline_model))

    assert graph_shape(by_plan) == graph_shape(by_pipeline)
    assert set(by_plan.nodes) == {"load_memory", "save_memory", *(s.step_id for s in plan.steps)}
    plan_run, pipeline_run = await by_plan.run({}), await by_pipeline.run({})
    assert plan_run.status == pipeline_run.status == "completed"
    assert plan_run.state["results"] == pipeline_run.state["results"]
    assert plan_run.state["shared_context"] == pipeline_run.state["shared_context"]
    assert [(r.node, r.status) for r in plan_run.node_runs] == [
        (r.node, r.status) for r in pipeline_run.node_runs
    ]
    assert [r.messages for r in by_plan_model.requests] == [
        r.messages for r in by_pipeline_model.requests
    ]


async def test_problems_found_against_the_registry_name_the_step(
    store: SqliteBlockStore,
) -> None:
    plan = TaskPlan.from_data(
        with_steps({"step_id": "a", "block_id": "recall_order"}, step("b", "a", block_id="nope"))
    )
    with pytest.raises(PipelineError) as refused:
        await compile_task_plan(plan, store, BlockExecutor())
    (problem,) = refused.value.problems
    assert problem.startswith("node 'b': ")
    assert "nope" in problem
