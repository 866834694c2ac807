"""Spec: a Python block's context carries the run's user and their long-term memory (seed 003),
and its environment holds only the variables its definition names.

The blocks run in the real bubblewrap jail. Reading ``os.environ`` is the
policy layer's business (it may or may not allow it); these blocks run with
the policy off so that they show exactly what the process environment holds.
"""

from __future__ import annotations

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor
from flowcore.errors import BlockDefinitionError
from flowcore.memory import InMemoryStore, MemoryManager
from flowcore.sandbox import PythonSandbox, SandboxLimits

from .harness import run_block

SHOW_CONTEXT = """
def execute(inputs, context):
    return {"context": context}
"""

SHOW_ENV = """
import os

def execute(inputs, context):
    return {"env": dict(os.environ)}
"""


def python_block(source: str, **fields: object) -> BlockDefinition:
    data: dict[str, object] = {
        "id": "peek",
        "name": "Peek",
        "description": "Report what the block sees",
        "kind": "python",
        "source_code": source,
        "max_retries": 0,
    }
    data.update(fields)
    return BlockDefinition.from_data(data)


def executor(**options: object) -> BlockExecutor:
    sandbox = PythonSandbox(limits=SandboxLimits(cpu_seconds=2), policy=False)
    return BlockExecutor(sandbox=sandbox, retry_wait=0, **options)  # type: ignore[arg-type]


async def test_the_context_carries_the_user_and_a_snapshot_of_their_memory() -> None:
    store = InMemoryStore()
    await MemoryManager(store).update_preferences("ada", {"usual_order": "burrito"})
    await store.put(("users", "ada", "memory"), "allergy", "peanuts")
    await store.put(("users", "bob", "memory"), "allergy", "none")  # another user's

    run = await run_block(
        python_block(SHOW_CONTEXT),
        executor(memory=store),
        config={"user_id": "ada", "user": {"name": "Ada", "plan": "pro"}},
    )

    context = run.outputs["context"]
    assert context["user_id"] == "ada"
    assert context["user"] == {"name": "Ada", "plan": "pro"}
    assert context["memory"] == {"usual_order": "burrito", "allergy": "peanuts"}
    assert {"run_id", "node", "block_id", "block_version", "attempt"} <= set(context)
    assert context["node"] == "step"


async def test_without_a_user_the_context_says_so_plainly() -> None:
    run = await run_block(python_block(SHOW_CONTEXT), executor(memory=InMemoryStore()))

    context = run.outputs["context"]
    assert (context["user_id"], context["user"], context["memory"]) == (None, {}, {})


async def test_the_environment_holds_only_the_variables_the_block_names() -> None:
    environment = {"WEATHER_API_KEY": "k-123", "DATABASE_URL": "postgres://secret", "HOME": "/"}
    block = python_block(SHOW_ENV, env=["WEATHER_API_KEY", "NOT_SET_ANYWHERE"])

    run = await run_block(block, executor(environment=environment))

    assert run.outputs["env"] == {"WEATHER_API_KEY": "k-123"}


async def test_a_block_naming_no_variables_gets_an_empty_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLOWCORE_CONTEXT_CANARY", "from-the-host")

    run = await run_block(python_block(SHOW_ENV), executor(environment={"A": "1"}))

    assert run.outputs["env"] == {}


async def test_under_the_policy_a_block_reads_its_variables_through_os() -> None:
    source = """
import os

async def execute(inputs, context):
    return {"key": os.getenv("WEATHER_API_KEY"), "names": sorted(os.environ)}
"""
    sandbox = PythonSandbox(limits=SandboxLimits(cpu_seconds=2))
    guarded = BlockExecutor(sandbox=sandbox, retry_wait=0, environment={"WEATHER_API_KEY": "k"})

    run = await run_block(python_block(source, env=["WEATHER_API_KEY"]), guarded)

    assert run.outputs == {"key": "k", "names": ["WEATHER_API_KEY"]}


@pytest.mark.parametrize("name", ["1ST", "WITH-DASH", "A B", "", "X=Y"])
def test_env_names_must_be_environment_variable_names(name: str) -> None:
    with pytest.raises(BlockDefinitionError, match="is not an environment variable name"):
        python_block(SHOW_ENV, env=[name])


def test_env_applies_only_to_blocks_that_run_python() -> None:
    with pytest.raises(BlockDefinitionError, match="env only applies to blocks"):
        BlockDefinition.from_data(
            {
                "id": "ask",
                "name": "Ask",
                "description": "Ask a model",
                "kind": "llm",
                "prompt_template": "Hi",
                "env": ["OPENAI_API_KEY"],
            }
        )
