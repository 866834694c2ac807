"""Span names and attributes: the OpenTelemetry GenAI semantic conventions plus flowcore's ids.

Pure functions from flowcore events to plain dicts, so they are tested
without a tracer and import nothing of OpenTelemetry. Attribute names follow
the GenAI conventions (status "development" upstream): ``gen_ai.operation.name``,
``gen_ai.provider.name`` (and the older ``gen_ai.system`` beside it, which
backends built on earlier versions of the conventions still read),
``gen_ai.request.model``, ``gen_ai.response.model``,
``gen_ai.usage.input_tokens`` / ``output_tokens``,
``gen_ai.response.finish_reasons``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.conversation.id`` (the run's thread) and
``error.type``. flowcore's own facts live under ``flowcore.*``.
"""

from __future__ import annotations

from typing import Any

from flowcore.events import (
    RunStartEvent,
    ToolCallStartEvent,
    UsageEvent,
)

__all__ = [
    "FLOWCORE_GRAPH_NAME",
    "FLOWCORE_GRAPH_VERSION",
    "FLOWCORE_NODE",
    "FLOWCORE_RUN_ID",
    "FLOWCORE_THREAD_ID",
    "GEN_AI_CONVERSATION_ID",
    "GEN_AI_OPERATION_NAME",
    "llm_attributes",
    "llm_span_name",
    "run_attributes",
    "run_span_name",
    "tool_attributes",
    "tool_span_name",
]

GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_SYSTEM = "gen_ai.system"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
ERROR_TYPE = "error.type"

FLOWCORE_RUN_ID = "flowcore.run.id"
FLOWCORE_GRAPH_NAME = "flowcore.graph.name"
FLOWCORE_GRAPH_VERSION = "flowcore.graph.version"
FLOWCORE_THREAD_ID = "flowcore.thread.id"
FLOWCORE_NODE = "flowcore.node"


def run_span_name(event: RunStartEvent) -> str:
    """``invoke_workflow {graph}``: a run is a GenAI workflow invocation.

    Example:
        >>> ev = RunStartEvent(run_id="r", graph_name="agent", graph_version="1",
        ...                    superstep=0, timestamp=0.0, input={})
        >>> run_span_name(ev)
        'invoke_workflow agent'
    """
    return f"invoke_workflow {event.graph_name}"


def run_attributes(event: RunStartEvent) -> dict[str, Any]:
    """The run span's attributes at its start (ids, no input values: they may be private).

    Example:
        >>> ev = RunStartEvent(run_id="r", graph_name="agent", graph_version="1",
        ...                    superstep=0, timestamp=0.0, input={})
        >>> run_attributes(ev)["flowcore.run.id"]
        'r'
    """
    return {
        GEN_AI_OPERATION_NAME: "invoke_workflow",
        FLOWCORE_RUN_ID: event.run_id,
        FLOWCORE_GRAPH_NAME: event.graph_name,
        FLOWCORE_GRAPH_VERSION: event.graph_version,
    }


def llm_span_name(event: UsageEvent) -> str:
    """``chat {model}``, the conventions' ``{operation} {request model}``.

    Example:
        >>> ev = UsageEvent(run_id="r", graph_name="g", graph_version="1", superstep=1,
        ...                 timestamp=0.0, node="n", block_id="b", provider="openai",
        ...                 model="gpt-4o-2024-08-06", input_tokens=3, output_tokens=2,
        ...                 request_model="gpt-4o")
        >>> llm_span_name(ev)
        'chat gpt-4o'
    """
    model = event.request_model or event.model
    return f"chat {model}" if model else "chat"


def llm_attributes(event: UsageEvent) -> dict[str, Any]:
    """One model call's attributes: provider, models, token usage and finish reason.

    Example:
        >>> ev = UsageEvent(run_id="r", graph_name="g", graph_version="1", superstep=1,
        ...                 timestamp=0.0, node="n", block_id="b", provider="openai",
        ...                 model="gpt-4o", input_tokens=3, output_tokens=2, finish_reason="stop")
        >>> attrs = llm_attributes(ev)
        >>> attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.response.finish_reasons"]
        (3, ('stop',))
    """
    attrs: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: "chat",
        GEN_AI_PROVIDER_NAME: event.provider,
        GEN_AI_SYSTEM: event.provider,
        GEN_AI_INPUT_TOKENS: event.input_tokens,
        GEN_AI_OUTPUT_TOKENS: event.output_tokens,
        "flowcore.block.id": event.block_id,
    }
    request_model = event.request_model or event.model
    if request_model:
        attrs[GEN_AI_REQUEST_MODEL] = request_model
    if event.model:
        attrs[GEN_AI_RESPONSE_MODEL] = event.model
    if event.finish_reason:
        attrs[GEN_AI_FINISH_REASONS] = (event.finish_reason,)
    if event.invocation_id:
        attrs["flowcore.invocation.id"] = event.invocation_id
    if event.prompt_hash:
        attrs["flowcore.prompt_hash"] = event.prompt_hash
    if event.cost_usd is not None:
        attrs["flowcore.cost_usd"] = event.cost_usd
    return attrs


def tool_span_name(event: ToolCallStartEvent) -> str:
    """``execute_tool {tool}``.

    Example:
        >>> ev = ToolCallStartEvent(run_id="r", graph_name="g", graph_version="1", superstep=1,
        ...                         timestamp=0.0, node="n", tool_call_id="c1",
        ...                         tool_name="search", args={})
        >>> tool_span_name(ev)
        'execute_tool search'
    """
    return f"execute_tool {event.tool_name}"


def tool_attributes(event: ToolCallStartEvent) -> dict[str, Any]:
    """A tool call's attributes: its name and call id (never its arguments: they may be private).

    Example:
        >>> ev = ToolCallStartEvent(run_id="r", graph_name="g", graph_version="1", superstep=1,
        ...                         timestamp=0.0, node="n", tool_call_id="c1",
        ...                         tool_name="search", args={"q": "x"})
        >>> tool_attributes(ev)["gen_ai.tool.call.id"]
        'c1'
    """
    return {
        GEN_AI_OPERATION_NAME: "execute_tool",
        GEN_AI_TOOL_NAME: event.tool_name,
        GEN_AI_TOOL_CALL_ID: event.tool_call_id,
        GEN_AI_TOOL_TYPE: "function",
    }
