"""Errors of the run queue (:mod:`flowcore.queue`).

::

    FlowcoreError
     ├── QueueConfigError (InvalidInputError)   the queue needs Postgres, or a bad option
     ├── ThreadBusyRejectedError (RuntimeError)  multitask strategy "reject" refused a run
     └── QueueStoreError                         the queue's tables could not be read/written

Example:
    >>> ThreadBusyRejectedError("t1", "r9").code
    'thread-busy-rejected'
"""

from __future__ import annotations

from flowcore.errors import FlowcoreError, InvalidInputError

__all__ = ["QueueConfigError", "QueueStoreError", "ThreadBusyRejectedError"]


class QueueConfigError(InvalidInputError):
    """The queue cannot be used as configured (no Postgres URL, an unknown strategy ...).

    Example:
        >>> QueueConfigError("needs Postgres").code
        'queue-config'
    """

    code = "queue-config"


class QueueStoreError(FlowcoreError):
    """The queue's own tables (runs, events) could not be read or written.

    Example:
        >>> QueueStoreError("cannot reach the database").code
        'queue-store'
    """

    code = "queue-store"


class ThreadBusyRejectedError(FlowcoreError, RuntimeError):
    """A run was refused: its thread already has a queued or running run (strategy ``reject``).

    Example:
        >>> str(ThreadBusyRejectedError("t1", "r9")).startswith("thread 't1'")
        True
    """

    code = "thread-busy-rejected"

    def __init__(self, thread_id: str, active_run_id: str) -> None:
        self.thread_id = thread_id
        self.active_run_id = active_run_id
        super().__init__(
            f"thread {thread_id!r} already has run {active_run_id!r} queued or running, and "
            "this run was submitted with multitask strategy 'reject'; wait for that run to "
            "end, or submit with strategy 'enqueue' (run after it), 'interrupt' (stop it at "
            "its next step boundary, keeping its progress) or 'rollback' (stop it and drop "
            "its checkpoints)"
        )
