"""Tools a graph can call, and the runner every call goes through."""

from flowcore.tools.runner import (
    Tool,
    ToolCallFinished,
    ToolCallStarted,
    ToolErrorCode,
    ToolResult,
    ToolRunner,
    new_tool_call_id,
)

__all__ = [
    "Tool",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolErrorCode",
    "ToolResult",
    "ToolRunner",
    "new_tool_call_id",
]
