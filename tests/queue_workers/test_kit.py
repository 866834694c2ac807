"""Spec: ``QueueExecutor`` passes the GraphExecutorPort conformance kit on a real Postgres.

Runs are queued with procrastinate and executed by a real ``QueueWorker``
(procrastinate's worker, heartbeats, LISTEN/NOTIFY) in the test's event
loop; the events come back through the queue's events table and NOTIFY.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from flowcore.queue import QueueExecutor
from flowcore.testing import ExecutorConformance, KitTargets, named_targets

from .helpers import running_worker


class TestQueueExecutor(ExecutorConformance):
    run_timeout = 60.0
    first_event_timeout = 30.0

    @pytest.fixture
    async def executor(self, pg_schema_url: str) -> AsyncIterator[QueueExecutor]:
        async with QueueExecutor(pg_schema_url) as executor, running_worker(pg_schema_url):
            yield executor

    @pytest.fixture
    def kit_targets(self) -> KitTargets:
        return named_targets()
