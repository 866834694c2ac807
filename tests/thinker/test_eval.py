"""Spec: the evaluation passes with the scripted model, and its fault cases are not vacuous."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from flowcore.blocks import SqliteBlockStore
from flowcore.thinker import PROMPT_BLOCK_IDS, Faults, Thinker, ThinkerModel, ensure_prompt_blocks

from .conftest import executor_for

BENCH = Path(__file__).resolve().parents[2] / "bench" / "thinker_eval.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("thinker_eval", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["thinker_eval"] = module
    spec.loader.exec_module(module)
    return module


def test_every_eval_case_holds_with_the_scripted_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _bench()
    assert len(bench.CASES) >= 20
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert f"{len(bench.CASES)}/{len(bench.CASES)} cases pass (scripted model)" in out
    rows = [line for line in out.splitlines() if line.split(" ")[0].isdigit()]
    assert len(rows) == len(bench.CASES)
    assert sum(" failed " in row for row in rows) == 1  # the block that is never right


async def test_without_the_problems_fed_back_a_faulty_answer_is_never_repaired(
    registry: SqliteBlockStore,
) -> None:
    # A decompose prompt edited so that it no longer shows the problems: the model
    # is asked again but never told what was wrong, so it repeats its mistake.
    prompts = await ensure_prompt_blocks(registry)
    template = prompts["decompose"].prompt_template
    assert template is not None
    blind = template.split("{% if problems %}")[0] + "{# {{ problems }} {{ previous }} #}"
    await registry.save(prompts["decompose"].model_copy(update={"prompt_template": blind}))
    thinker = Thinker(registry, executor_for(ThinkerModel(faults=Faults(decompose=2))))
    result = await thinker.create("Reverse a text")
    assert result.status == "failed"
    assert (await registry.get(PROMPT_BLOCK_IDS["decompose"])).version == 2
