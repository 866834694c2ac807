"""Runs on worker processes: a job queue on Postgres (procrastinate), shared by any number of hosts.

* :class:`QueueExecutor` — the ``GraphExecutorPort`` that queues runs and
  streams their events back (LISTEN/NOTIFY, every event also stored).
* :class:`QueueWorker` — what ``flowcore worker`` runs: executes queued runs
  with flowcore's engine on the Postgres checkpointer; a crashed worker's
  runs are re-queued from its stale heartbeat and resume from their last
  checkpoint.
* :class:`RunJob`, :data:`MultitaskStrategy` — a job's data, and what to do
  when a thread is busy (``reject``, ``enqueue``, ``interrupt``, ``rollback``).

Needs ``pip install 'flowcore[queue]'`` (procrastinate, psycopg); importing
this package does not import them.

Example:
    >>> from flowcore.queue import RunJob
    >>> RunJob(run_id="r1", target={"graph": "chat"}).strategy
    'enqueue'
"""

import typing as _typing

from flowcore.queue.errors import QueueConfigError, QueueStoreError, ThreadBusyRejectedError
from flowcore.queue.jobs import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    TASK_NAME,
    MultitaskStrategy,
    RunJob,
    check_strategy,
)

if _typing.TYPE_CHECKING:
    from flowcore.queue.executor import QueueExecutor, QueueRunHandle
    from flowcore.queue.worker import QueueWorker

__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "TASK_NAME",
    "MultitaskStrategy",
    "QueueConfigError",
    "QueueExecutor",
    "QueueRunHandle",
    "QueueStoreError",
    "QueueWorker",
    "RunJob",
    "ThreadBusyRejectedError",
    "check_strategy",
]

_LAZY = {
    "QueueExecutor": "flowcore.queue.executor",
    "QueueRunHandle": "flowcore.queue.executor",
    "QueueWorker": "flowcore.queue.worker",
}


def __getattr__(name: str) -> _typing.Any:
    # The executor and worker pull in the engine's port and storage modules: load on use.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
