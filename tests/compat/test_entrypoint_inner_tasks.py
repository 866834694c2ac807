"""Spec: an entrypoint can define its ``@task`` functions inside its own body.

Checked in a fresh interpreter: the test process has defined tasks already,
and an entrypoint must work when its own body defines the first one.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_first_task_of_the_process_may_be_defined_inside_the_entrypoint() -> None:
    code = textwrap.dedent(
        """
        from flowcore.compat.langgraph import entrypoint, task

        @entrypoint()
        def work(x: int) -> int:
            @task
            def inc(n: int) -> int:
                return n + 1

            return inc(x).result()

        print(work.invoke(41))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"
