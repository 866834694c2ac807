"""Tools a graph can call, and the runner every call goes through."""

from flowcore.tools.runner import (
    Tool,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolErrorCode,
    ToolResult,
    ToolRunner,
)

__all__ = [
    "Tool",
    "ToolCallResultEvent",
    "ToolCallStartEvent",
    "ToolErrorCode",
    "ToolResult",
    "ToolRunner",
]
