"""One process running several pipelines at once on a shared SQLite file, for the memory specs.

    python tests/memory/pipeline_process.py DATABASE NAME RUNS ROUNDS

Opens every store on DATABASE (as the CLI does), then runs ROUNDS rounds of
RUNS concurrent runs of a pipeline that remembers ``city``, each run for its
own user, with the offline model. Prints JSON: the runs' statuses and errors.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from flowcore.cli.workspace import open_workspace
from flowcore.llm.offline import OfflineProvider
from flowcore.pipeline import Pipeline

PIPELINE = Pipeline.model_validate(
    {
        "id": "weather",
        "name": "Weather",
        "memory_keys": ["city"],
        "nodes": [{"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.city>>"}}],
    }
)


async def _user(runner: Any, user: str, rounds: int) -> list[list[Any]]:
    outcomes: list[list[Any]] = []
    for n in range(rounds):
        result = await runner.run(PIPELINE, {"city": f"{user}-city-{n}"}, user_id=user)
        outcomes.append([result.status, [str(e) for e in result.errors]])
    return outcomes


async def main(database: str, name: str, runs: int, rounds: int) -> None:
    async with open_workspace(Path(database)) as ws:
        runner = ws.runner(OfflineProvider(), None, [])
        users = [f"{name}-u{k}" for k in range(runs)]
        per_user = await asyncio.gather(*(_user(runner, u, rounds) for u in users))
    print(json.dumps({"name": name, "outcomes": [o for each in per_user for o in each]}))


if __name__ == "__main__":
    db, who, count, times = sys.argv[1:5]
    asyncio.run(main(db, who, int(count), int(times)))
