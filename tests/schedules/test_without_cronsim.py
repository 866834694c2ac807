"""Spec: cronsim is an optional extra: flowcore imports without it and says how to get it."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from flowcore.errors import InvalidInputError
from flowcore.schedules import new_schedule, next_slot


def test_importing_flowcore_and_its_cli_does_not_load_cronsim() -> None:
    probe = "import sys, flowcore.schedules, flowcore.cli; print('cronsim' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert (proc.returncode, proc.stdout) == (0, "False\n"), proc.stderr


def test_without_cronsim_slot_times_ask_for_the_schedules_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "cronsim", None)  # import cronsim now raises ImportError
    made = new_schedule({"id": "p", "name": "P", "nodes": []}, cron="@daily", now=0.0)
    with pytest.raises(InvalidInputError, match=r"pip install 'flowcore\[schedules\]'"):
        next_slot(made, datetime(2024, 1, 1, tzinfo=UTC))
