"""``QueueServerExecutor``: the runs API's executor when ``flowcore worker`` processes run the runs.

``flowcore serve --executor queue`` (or ``FLOWCORE_EXECUTOR=queue``) builds
one over a :class:`~flowcore.queue.executor.QueueExecutor` on the Postgres
database of ``FLOWCORE_DATABASE_URL``. A run the API starts is queued under
the server's own run id and its events stream back from the queue's stored
events (LISTEN/NOTIFY), so SSE and the AI SDK stream work as in process.

The server still resolves targets itself (a graph must be registered with
the server *and* the workers, under the same name; pipelines and plans travel
with the job), and keeps its pipeline runner to draw graphs and read threads.

Runs belong to the workers, not to this process: closing the executor
(server shutdown) only stops following them, and ``attach(run_id)`` follows
a run again from its first event (the server restarted, or another API
process took it over).

Example:
    >>> # factory = queue_executor_factory("postgresql://app:pw@db/flowcore")
    >>> # async with open_server(settings, ..., executor_factory=factory) as app: ...
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.plan import TaskPlan
from flowcore.pipeline.runner import PipelineRunner
from flowcore.port.events import AiEvent
from flowcore.port.inproc import Target
from flowcore.port.protocol import RunHandle, RunRequest
from flowcore.secrets import Redactor

if TYPE_CHECKING:
    from flowcore.cli.workspace import Workspace
    from flowcore.queue.executor import QueueExecutor

__all__ = ["EXECUTOR_KINDS", "QueueServerExecutor", "executor_kind", "queue_executor_factory"]

EXECUTOR_KINDS = ("inproc", "queue")
"""What ``flowcore serve --executor`` (and ``FLOWCORE_EXECUTOR``) accepts."""


class QueueServerExecutor:
    """A :class:`~flowcore.server.executor.ServerExecutor` whose runs go to queue workers.

    Args:
        queue: The queue's executor (opened by :meth:`open`, closed by :meth:`aclose`).
        runner: The server's pipeline runner (graphs drawn, threads read; runs not run).

    Example:
        >>> # executor = QueueServerExecutor(QueueExecutor(url), runner)
        >>> # await executor.open()
        >>> # handle = executor.run(request, run_id="r1")
    """

    # The run manager reads this: a shutdown detaches from runs instead of stopping them.
    detached_runs = True

    def __init__(self, queue: QueueExecutor, runner: PipelineRunner | None) -> None:
        self.queue = queue
        self.runner = runner
        self.graphs: dict[str, Target] = {}

    def register(self, name: str, target: Target) -> None:
        """Make ``target`` runnable by ``name`` (the workers must register it by the same name).

        Example:
            >>> # executor.register("chat", chat_graph)
        """
        self.graphs[name] = target

    async def open(self) -> QueueServerExecutor:
        """Connect to the queue (installing its tables if needed).

        Example:
            >>> # await executor.open()
        """
        await self.queue.open()
        return self

    def run(self, request: RunRequest, *, run_id: str | None = None) -> RunHandle:
        """Queue the run under ``run_id``; its handle streams the worker's events back.

        A registered graph object travels as the name it was registered
        under, which is how the workers know it.

        Example:
            >>> # handle = executor.run(RunRequest("chat", {"q": "hi"}, caller), run_id="r1")
        """
        target = request.target
        if not isinstance(target, str | Pipeline | TaskPlan):
            name = next((n for n, g in self.graphs.items() if g is target), None)
            if name is not None:
                request = replace(request, target=name)
        return self.queue.run(request, run_id=run_id)

    def attach(self, run_id: str) -> RunHandle:
        """Follow the queued run ``run_id`` again, from its first event.

        Example:
            >>> # handle = executor.attach("r1")
        """
        return self.queue.attach(run_id)

    async def queued(self, run_id: str) -> bool:
        """Whether the queue has the run ``run_id`` (a server may stop before queueing it).

        Example:
            >>> # await executor.queued("r1")
        """
        return await self.queue.tables.get_run(run_id) is not None

    async def follow(self, run_id: str) -> AsyncIterator[AiEvent]:
        """The run's events from the first, live to ``done``, followed from any process.

        Leaving early stops only the following, never the run.

        Example:
            >>> # async for event in executor.follow("r1"): ...
        """
        handle = self.queue.attach(run_id)
        try:
            async for event in handle:
                yield event
        finally:
            handle.close()

    async def aclose(self) -> None:
        """Stop following runs and close the connections; the runs go on in the workers.

        Example:
            >>> # await executor.aclose()
        """
        await self.queue.aclose()


def queue_executor_factory(
    url: str, *, poll_interval: float = 0.5
) -> Callable[[Workspace, PipelineRunner, Redactor], QueueServerExecutor]:
    """An ``executor_factory`` for ``open_server``: runs go to the queue on Postgres ``url``.

    Raises :class:`~flowcore.queue.errors.QueueConfigError` at once for a URL
    that is not Postgres, or when the ``queue`` extra is not installed.

    Example:
        >>> # open_server(settings, ..., executor_factory=queue_executor_factory(url))
    """
    from flowcore.queue.app import require_procrastinate
    from flowcore.queue.worker import check_queue_url

    check_queue_url(url, "flowcore serve --executor queue")
    require_procrastinate("'flowcore serve --executor queue'")

    def build(ws: Workspace, runner: PipelineRunner, redactor: Redactor) -> QueueServerExecutor:
        from flowcore.queue.executor import QueueExecutor

        # Runs are recorded in the shared run history by the worker that executes them.
        return QueueServerExecutor(QueueExecutor(url, poll_interval=poll_interval), runner)

    return build


def executor_kind(value: Any) -> str:
    """``value`` (from ``--executor`` or ``FLOWCORE_EXECUTOR``) checked: ``inproc`` or ``queue``.

    Example:
        >>> executor_kind("queue")
        'queue'
    """
    from flowcore.cli.workspace import CliError

    text = str(value or "inproc").strip().lower()
    if text not in EXECUTOR_KINDS:
        raise CliError(
            f"executor {value!r} is not one of {', '.join(EXECUTOR_KINDS)}: use --executor "
            "inproc (runs in the server process, the default) or --executor queue (runs on "
            "'flowcore worker' processes; needs FLOWCORE_DATABASE_URL=postgresql://...)"
        )
    return text
