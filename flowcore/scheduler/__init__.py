"""The scheduler: runs compiled graphs in supersteps or dataflow order."""

from flowcore.scheduler.context import NodeContext
from flowcore.scheduler.options import (
    DEFAULT_RECURSION_LIMIT,
    ErrorPolicy,
    RunOptions,
    SchedulingMode,
)

__all__ = ["DEFAULT_RECURSION_LIMIT", "ErrorPolicy", "NodeContext", "RunOptions", "SchedulingMode"]
