"""flowcore's one runtime: what happens between "these tasks are ready" and "their writes are in".

Both planners (the graphlib planner of native graphs, pipelines and task
plans in :mod:`flowcore.scheduler`; the LangGraph planner of
:mod:`flowcore.compat.langgraph`) decide *what* runs; the runtime runs it:

* :func:`call_node` — the one function that calls a node's or router's code;
* :func:`attempt_with_retries` — attempts of one task under a timeout and a
  :class:`RetryRule`;
* :func:`run_batch` and :class:`TaskPool` — the tasks of one step together,
  under a concurrency limit, failing fast;
* :func:`run_lease`, :func:`hold_thread` and :class:`LeaseKeeper` — the
  thread's lease for one run: taken before the thread is read, renewed while
  the run lives, released however it ends (:mod:`flowcore.runtime.leases`);
* :class:`EventStream` — the events of one run as an async iterator, with
  its result (native ``RunStream`` and compat ``CompatRunStream`` are it);
* :func:`run_supersteps` and :func:`run_step` — the superstep loop itself
  (next step, checkpoint, the step's tasks, their writes), over a
  :class:`Superstep` that each planner's run supplies; :class:`StepWrites`
  says which task's write may ride with the step's checkpoint;
* :class:`UsageMeter`, :func:`charge_usage` — exact token accounting: every
  model call is charged to the node run and the run that made it
  (:mod:`flowcore.runtime.usage`);
* :class:`DurabilityWriter` — when a run's checkpoints and task writes reach
  the store (``sync``, ``async``, ``exit``: :mod:`flowcore.runtime.durability`),
  through the :class:`DurableStore` port each graph kind supplies.
"""

from flowcore.runtime.calls import call_node
from flowcore.runtime.durability import (
    MAX_QUEUED_ITEMS,
    BatchingStore,
    Durability,
    DurabilityWriter,
    DurableStore,
)
from flowcore.runtime.leases import LeaseKeeper, hold_thread, new_holder_id, run_lease
from flowcore.runtime.pool import TaskPool, run_batch
from flowcore.runtime.retries import AttemptTimeout, RetryRule, attempt_with_retries
from flowcore.runtime.steps import StepWrites, Superstep, run_step, run_supersteps
from flowcore.runtime.stream import EventStream
from flowcore.runtime.usage import UsageMeter, charge_usage, current_meter, metering

__all__ = [
    "MAX_QUEUED_ITEMS",
    "AttemptTimeout",
    "BatchingStore",
    "Durability",
    "DurabilityWriter",
    "DurableStore",
    "EventStream",
    "LeaseKeeper",
    "RetryRule",
    "StepWrites",
    "Superstep",
    "TaskPool",
    "UsageMeter",
    "attempt_with_retries",
    "call_node",
    "charge_usage",
    "current_meter",
    "hold_thread",
    "metering",
    "new_holder_id",
    "run_batch",
    "run_lease",
    "run_step",
    "run_supersteps",
]
