"""``ServerExecutor``: what the runs API needs of the executor it submits runs to.

The server never builds its executor deep inside: ``create_app`` and
:class:`~flowcore.server.manager.RunManager` take one, and
:func:`~flowcore.server.serve.open_server` makes it with its
``executor_factory`` (in process by default). Any executor port with these
few members serves: :class:`~flowcore.port.inproc.InProcExecutor`, or one that
hands runs to worker processes.

Example:
    >>> from flowcore.port.inproc import InProcExecutor
    >>> executor: ServerExecutor = InProcExecutor()
    >>> sorted(executor.graphs)
    []
"""

from __future__ import annotations

from typing import Protocol

from flowcore.pipeline.runner import PipelineRunner
from flowcore.port.inproc import Target
from flowcore.port.protocol import RunHandle, RunRequest

__all__ = ["ServerExecutor"]


class ServerExecutor(Protocol):
    """Runs by name, a pipeline runner for pipelines and plans, start and close.

    ``run(request, run_id=...)`` starts a run under the server's own id and
    returns its :class:`~flowcore.port.protocol.RunHandle` at once;
    ``runner`` compiles pipelines and plans and reads their threads' state.

    Example:
        >>> # handle = executor.run(RunRequest("chat", {"q": "hi"}, caller), run_id="r1")
    """

    graphs: dict[str, Target]
    runner: PipelineRunner | None

    def register(self, name: str, target: Target) -> None:
        """Make ``target`` runnable by ``name``."""
        ...

    def run(self, request: RunRequest, *, run_id: str | None = None) -> RunHandle:
        """Start the run ``request`` describes under ``run_id``; its handle, at once."""
        ...

    async def aclose(self) -> None:
        """Stop the runs still going and release what the executor holds."""
        ...
