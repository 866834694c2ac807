"""Spec: examples/nightly_digest.py fires every 01:30 London slot once, through both DST days."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nightly_digest.py"


def test_the_nightly_digest_example_fires_each_slot_once_across_dst_and_downtime() -> None:
    proc = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    # Which of the three schedulers claimed a slot varies; everything else is fixed.
    lines = [re.sub(r"scheduler-[123]", "scheduler-N", line) for line in proc.stdout.splitlines()]
    days = ["Fri 29 Mar 01:30 GMT", "Sat 30 Mar 01:30 GMT", "Sun 31 Mar 02:00 BST",
            "Mon 01 Apr 01:30 BST", "Tue 02 Apr 01:30 BST"]  # fmt: skip
    after = ["Fri 05 Apr 01:30 BST", "Sun 27 Oct 01:30 BST", "Mon 28 Oct 01:30 GMT"]
    skip = [line.split("  ")[1] for line in lines[1:9]]
    catch_up = [line.split("  ")[1] for line in lines[10:19]]
    assert lines[0] == "nightly:"
    assert skip == [*days, *after]  # the missed Wed 03 and Thu 04 Apr never fire
    assert lines[9] == "nightly-catch-up:"
    assert catch_up == [*days, "Thu 04 Apr 01:30 BST", *after]  # one run for both missed days
    assert lines[15].endswith("(stands for 1 missed)")
    assert lines[15].split()[5] == "catch_up"
    assert all(
        "run completed on schedule-nightly" in line for line in lines[1:19] if line[:2] == "  "
    )
    assert lines[-1] == "17 slots fired, each once; 17 runs in the history"
