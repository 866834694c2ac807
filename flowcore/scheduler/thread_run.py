"""What one run on a thread carries: where it resumes from and how it saves.

Built by :class:`~flowcore.graph.compiled.CompiledGraph` before the run
starts (loading and validating the thread), then handed to the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flowcore.checkpoint.protocol import WriteGroup
from flowcore.scheduler.persistence import CheckpointWriter, SnapshotPolicy

__all__ = ["ThreadRun"]


@dataclass(slots=True)
class ThreadRun:
    """One run's view of its thread.

    ``cursor`` is where the run continues (None: from the graph's entry);
    ``pending`` holds the node writes saved against ``head_id`` by an earlier
    attempt; ``answers`` maps an interrupted node to the value it resumes with.
    """

    thread_id: str
    writer: CheckpointWriter
    policy: SnapshotPolicy
    head_id: str | None
    cursor: Mapping[str, Any] | None = None
    pending: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    groups: list[WriteGroup] = field(default_factory=list)
    interrupt_before: frozenset[str] = frozenset()
    interrupt_after: frozenset[str] = frozenset()
    source: str = "input"
    start_step: int = 0
    outputs: dict[str, Any] = field(default_factory=dict)
    run_input: Mapping[str, Any] = field(default_factory=dict)
    input_from: str | None = None
    """Id of the checkpoint whose metadata holds this run's input."""
    reuse_head: bool = False
    """True when resuming the head in place (its pending writes still count);
    False for a fork, whose first batch starts a new branch."""

    @property
    def syncs_each_step(self) -> bool:
        """Whether each step's checkpoint is stored before the next step starts (``sync``)."""
        return self.writer.durability == "sync"
