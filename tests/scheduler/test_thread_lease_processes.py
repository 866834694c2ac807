"""Spec: one thread, one runner, across real processes sharing one SQLite file (native API).

This module is also the worker: ``python test_thread_lease_processes.py
<config json>`` opens the file, says it is ready, waits for the go signal
and resumes the thread. The graph's ``effect`` node appends the worker's
pid to a side-effect file before it holds on until the test releases it,
so the file counts how often the side effect happened.

* Two workers resume the same paused thread at once: exactly one runs the
  effect; the other raises ``ThreadBusyError`` naming the winner.
* A worker SIGKILLed in the middle of the effect keeps the thread until its
  lease expires (a run meanwhile is refused); then a new worker takes the
  thread over and completes it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from flowcore import START, Graph, ThreadBusyError
from flowcore.checkpoint import SqliteCheckpointer

if TYPE_CHECKING:
    from conftest import ProcessWorkers

THIS = Path(__file__).resolve()
GUARD = 60.0
"""Seconds a worker or a wait may take before the test gives up (only hit on failure)."""


class State(TypedDict):
    n: int


def build(store: SqliteCheckpointer, effects: Path, release: Path | None) -> Any:
    """START -> prepare -> effect, paused before effect."""

    async def prepare(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    async def effect(state: State) -> dict[str, Any]:
        line = f"{os.getpid()}\n"
        await asyncio.to_thread(_append, effects, line)
        if release is not None:
            # Held until the test says so, not for a fixed while that a slow rival
            # process could outlast on a busy machine.
            await asyncio.to_thread(_wait_for_file, release)
        return {"n": state["n"] + 10}

    graph = Graph(State).add_node("prepare", prepare).add_node("effect", effect)
    graph.add_edge(START, "prepare").add_edge("prepare", "effect")
    return graph.compile(checkpointer=store, interrupt_before=["effect"])


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)


def _append(path: Path, line: str) -> None:
    with path.open("a") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


# ---------------------------------------------------------------------- the worker


async def _work(config: dict[str, Any]) -> dict[str, Any]:
    async with SqliteCheckpointer(config["db"], lease_ttl=config["ttl"]) as store:
        app = build(store, Path(config["effects"]), _path(config["release"]))
        await asyncio.to_thread(_ready_then_wait_for_go, Path(config["ready"]), Path(config["go"]))
        try:
            result = await app.run(None, thread_id=config["thread"])
        except ThreadBusyError as exc:
            return {"outcome": "busy", "holder": exc.holder, "message": str(exc)}
        return {"outcome": result.status, "n": result.state["n"]}


def _ready_then_wait_for_go(ready: Path, go: Path) -> None:
    ready.touch()
    _wait_for_file(go)


def _wait_for_file(path: Path) -> None:
    """Block until the test creates ``path``, or GUARD seconds have passed."""
    deadline = time.monotonic() + GUARD
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.005)


def main() -> None:
    config = json.loads(sys.argv[1])
    print(json.dumps(asyncio.run(_work(config))), flush=True)


# ---------------------------------------------------------------------- the specs


async def paused_thread(db: Path, effects: Path) -> None:
    async with SqliteCheckpointer(db) as store:
        first = await build(store, effects, None).run({"n": 0}, thread_id="t")
    assert first.status == "interrupted"
    assert first.state["n"] == 1


def start_worker(
    workers: ProcessWorkers, tmp_path: Path, name: str, *, holds: bool, ttl: float = 30.0
) -> Any:
    config = {
        "db": str(tmp_path / "threads.db"),
        "effects": str(tmp_path / "effects.txt"),
        "thread": "t",
        "release": str(tmp_path / "release") if holds else None,
        "ttl": ttl,
        "ready": str(tmp_path / f"{name}.ready"),
        "go": str(tmp_path / "go"),
    }
    return workers.start(THIS, config)


def effect_pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "effects.txt"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


async def test_two_processes_resuming_one_paused_thread_run_it_once(
    tmp_path: Path, workers: ProcessWorkers
) -> None:
    await paused_thread(tmp_path / "threads.db", tmp_path / "effects.txt")
    runners = [start_worker(workers, tmp_path, name, holds=True) for name in ("a", "b")]
    await workers.wait_for(
        lambda: all((tmp_path / f"{n}.ready").exists() for n in ("a", "b")), "both workers"
    )

    (tmp_path / "go").touch()  # both resume at once
    # The winner holds the thread until the loser has given up and exited.
    await workers.wait_for(
        lambda: any(w.poll() is not None for w in runners), "one worker to give up"
    )
    (tmp_path / "release").touch()
    outcomes = [await asyncio.to_thread(workers.outcome, w) for w in runners]

    kinds = sorted(o["outcome"] for o in outcomes)
    assert kinds == ["busy", "completed"], outcomes
    winner = runners[[o["outcome"] for o in outcomes].index("completed")]
    loser = next(o for o in outcomes if o["outcome"] == "busy")
    assert effect_pids(tmp_path) == [winner.pid]  # the side effect happened once
    assert loser["holder"].split(":")[1] == str(winner.pid)
    assert "'t' is already running elsewhere" in loser["message"]
    assert next(o for o in outcomes if o["outcome"] == "completed")["n"] == 11


async def test_a_killed_holder_s_lease_expires_and_a_new_runner_completes_the_thread(
    tmp_path: Path, workers: ProcessWorkers
) -> None:
    db = tmp_path / "threads.db"
    await paused_thread(db, tmp_path / "effects.txt")
    # Long enough that the run below is refused before the dead holder's last renewal
    # lapses, however slowly a busy machine kills it and opens the file.
    ttl = 4.0
    doomed = start_worker(workers, tmp_path, "doomed", holds=True, ttl=ttl)
    (tmp_path / "go").touch()
    await workers.wait_for(
        lambda: effect_pids(tmp_path) == [doomed.pid], "the holder's side effect"
    )

    doomed.send_signal(signal.SIGKILL)
    doomed.communicate(timeout=GUARD)
    assert doomed.returncode == -signal.SIGKILL

    # Dead but not yet expired: the thread is still taken.
    async with SqliteCheckpointer(db, lease_ttl=ttl) as store:
        app = build(store, tmp_path / "effects.txt", None)
        try:
            await app.run(None, thread_id="t")
        except ThreadBusyError as exc:
            held = exc
        else:
            raise AssertionError("a run was allowed while the killed holder's lease lived")
    assert held.holder.split(":")[1] == str(doomed.pid)
    assert held.expires_at - time.time() <= ttl

    await asyncio.sleep(max(0.0, held.expires_at - time.time()) + 0.1)
    rescuer = start_worker(workers, tmp_path, "rescuer", holds=False, ttl=ttl)
    result = await asyncio.to_thread(workers.outcome, rescuer)

    assert result == {"outcome": "completed", "n": 11}
    # The killed run never saved its effect, so the rescuer ran it again (at least once).
    assert effect_pids(tmp_path) == [doomed.pid, rescuer.pid]


if __name__ == "__main__":
    main()
