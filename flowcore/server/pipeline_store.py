"""Saved Pipeline documents (``/api/pipelines``), one per pipeline id, in the server database.

Pipelines are shared like the block registry: every user of the server can
read and run them; the runs themselves stay private to whoever started them.
"""

from __future__ import annotations

import builtins
import json
import time

from flowcore.pipeline.model import Pipeline
from flowcore.server.schema import ServerDb

__all__ = ["PipelineStore"]


class PipelineStore:
    """Pipelines by id: save (insert or replace), get, list, delete.

    Example:
        >>> # store = PipelineStore(db)
        >>> # await store.save(pipeline); await store.get(pipeline.id)
    """

    def __init__(self, db: ServerDb) -> None:
        self.db = db

    async def save(self, pipeline: Pipeline) -> Pipeline:
        """Store ``pipeline`` under its id, replacing an older one.

        Example:
            >>> # await store.save(Pipeline.model_validate(document))
        """
        text = pipeline.model_dump_json(by_alias=True)
        await self.db.execute(
            "INSERT INTO flowcore_server_pipelines (pipeline_id, definition, saved_at) "
            "VALUES (?, ?, ?) ON CONFLICT (pipeline_id) DO UPDATE SET "
            "definition = excluded.definition, saved_at = excluded.saved_at",
            (pipeline.id, text, time.time()),
        )
        return pipeline

    async def get(self, pipeline_id: str) -> Pipeline | None:
        """The pipeline ``pipeline_id``, or None.

        Example:
            >>> # found = await store.get("market_research")
        """
        row = await self.db.fetchone(
            "SELECT definition FROM flowcore_server_pipelines WHERE pipeline_id = ?",
            (pipeline_id,),
        )
        return None if row is None else Pipeline.model_validate(json.loads(row[0]))

    async def list(self) -> builtins.list[Pipeline]:
        """Every saved pipeline, by id.

        Example:
            >>> # ids = [p.id for p in await store.list()]
        """
        rows = await self.db.fetchall(
            "SELECT definition FROM flowcore_server_pipelines ORDER BY pipeline_id"
        )
        return [Pipeline.model_validate(json.loads(r[0])) for r in rows]

    async def delete(self, pipeline_id: str) -> bool:
        """Remove the pipeline; True if there was one.

        Example:
            >>> # await store.delete("old")
        """
        changed = await self.db.execute(
            "DELETE FROM flowcore_server_pipelines WHERE pipeline_id = ?", (pipeline_id,)
        )
        return changed > 0
