"""``Tracing``: turns the events of flowcore runs into OpenTelemetry spans.

The engine hands every event of a run whose config carries a ``Tracing``
(``config={"tracing": tracing}``) to :meth:`Tracing.observe`; nothing in the
engine calls a tracer. Spans are opened and closed from events:

========================  ===============================================
event                     span
========================  ===============================================
``run_start`` / ``done``  ``invoke_workflow {graph}`` (the run)
``node_start`` / end      ``node {name}``, child of the run; ``node_error``
                          sets status ERROR, ``interrupt`` and
                          ``node_cancelled`` close it with a flag
``usage``                 ``chat {model}``, child of its node, placed in
                          time by the event's ``duration``
``tool_call_start`` /     ``execute_tool {tool}``, child of its node
``tool_call_result``
========================  ===============================================

Parentage comes from the events' node names, so parallel nodes each get
their own subtree. Event timestamps become span times, so a span's times
are when flowcore said the thing happened. Only ids, names, models and
counts are recorded: no inputs, outputs, prompts or tool arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flowcore.events import (
    BlockStartEvent,
    CheckpointEvent,
    DoneEvent,
    Event,
    InterruptEvent,
    NodeCancelledEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    RunStartEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UsageEvent,
)
from flowcore.tracing._attributes import (
    ERROR_TYPE,
    FLOWCORE_GRAPH_NAME,
    FLOWCORE_NODE,
    FLOWCORE_RUN_ID,
    FLOWCORE_THREAD_ID,
    GEN_AI_CONVERSATION_ID,
    llm_attributes,
    llm_span_name,
    run_attributes,
    run_span_name,
    tool_attributes,
    tool_span_name,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["INSTRUMENTATION_NAME", "Tracing", "enable"]

INSTRUMENTATION_NAME = "flowcore"
"""The instrumentation scope flowcore's spans are recorded under."""

NodeKey = tuple[tuple[str, ...], str]


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


@dataclass(slots=True)
class _RunSpans:
    """The open spans of one run, keyed the way its events name them."""

    run: Span
    graph_name: str
    thread_id: str | None = None
    # Open node spans by (namespace, node): a list, since Sends can run one node
    # several times at once; children go to the oldest open one.
    nodes: dict[NodeKey, list[Span]] = field(default_factory=dict)
    tools: dict[tuple[NodeKey, str], list[Span]] = field(default_factory=dict)
    # When each node last did something: where a model call with no duration began.
    marks: dict[NodeKey, float] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0


class Tracing:
    """A run observer that records each traced run as a tree of OpenTelemetry spans.

    Pass it in a run's config under ``"tracing"``; one instance serves any
    number of runs, concurrent ones included, on one event loop. Creating it
    imports ``opentelemetry`` (install ``flowcore[otel]``); flowcore imports
    nothing of OpenTelemetry otherwise.

    Args:
        tracer_provider: Where spans go; None means OpenTelemetry's global
            provider (whatever the application configured).
        tracer: A tracer to use as is, instead of one from a provider.

    Example:
        >>> # from opentelemetry.sdk.trace import TracerProvider
        >>> # tracing = Tracing(TracerProvider())
        >>> # await graph.run(inputs, config={"tracing": tracing})
    """

    def __init__(self, tracer_provider: TracerProvider | None = None, *, tracer: Any = None):
        try:
            from opentelemetry import trace
        except ModuleNotFoundError as exc:  # pragma: no cover - depends on the install
            raise ModuleNotFoundError(
                "flowcore tracing needs OpenTelemetry; install it with pip install 'flowcore[otel]'"
            ) from exc
        self._trace = trace
        if tracer is None:
            tracer = trace.get_tracer(INSTRUMENTATION_NAME, tracer_provider=tracer_provider)
        self._tracer: Tracer = tracer
        self._runs: dict[str, _RunSpans] = {}

    @property
    def open_runs(self) -> int:
        """How many runs have started and not yet ended (0 once every traced run is done)."""
        return len(self._runs)

    # ------------------------------------------------------------ dispatch
    def observe(self, event: Event) -> None:
        """Open, annotate or close the span ``event`` speaks of.

        Example:
            >>> # the engine calls it; applications never need to
        """
        if isinstance(event, RunStartEvent):
            self._run_start(event)
            return
        spans = self._runs.get(event.run_id)
        if spans is None:
            return  # a run that started before tracing was attached
        key: NodeKey = (event.namespace, getattr(event, "node", ""))
        if isinstance(event, NodeStartEvent):
            self._node_start(spans, key, event)
        elif isinstance(event, NodeEndEvent):
            self._node_close(
                spans, key, event.timestamp, {"flowcore.node.attempts": event.attempts}
            )
        elif isinstance(event, NodeErrorEvent):
            self._node_error(spans, key, event)
        elif isinstance(event, InterruptEvent):
            flags = {"flowcore.node.interrupted": True, "flowcore.interrupt.id": event.interrupt_id}
            self._node_close(spans, key, event.timestamp, flags)
        elif isinstance(event, NodeCancelledEvent):
            self._node_close(spans, key, event.timestamp, {"flowcore.node.cancelled": True})
        elif isinstance(event, NodeSkippedEvent):
            spans.run.add_event(
                "node_skipped",
                {FLOWCORE_NODE: event.node, "flowcore.skip.reason": event.reason},
                _ns(event.timestamp),
            )
        elif isinstance(event, BlockStartEvent):
            self._block_start(spans, key, event)
        elif isinstance(event, UsageEvent):
            self._llm_call(spans, key, event)
        elif isinstance(event, ToolCallStartEvent):
            self._tool_start(spans, key, event)
        elif isinstance(event, ToolCallResultEvent):
            self._tool_end(spans, key, event)
        elif isinstance(event, CheckpointEvent):
            self._thread(spans, event.thread_id)
        elif isinstance(event, DoneEvent):
            self._done(spans, event)
        if key[1]:
            spans.marks[key] = event.timestamp

    # ------------------------------------------------------------------ run
    def _context_of(self, span: Span) -> Any:
        return self._trace.set_span_in_context(span)

    def _run_start(self, event: RunStartEvent) -> None:
        # The caller's current span (if any) becomes the run's parent.
        span = self._tracer.start_span(
            run_span_name(event),
            attributes=run_attributes(event),
            start_time=_ns(event.timestamp),
        )
        self._runs[event.run_id] = _RunSpans(span, event.graph_name)

    def _thread(self, spans: _RunSpans, thread_id: str) -> None:
        if spans.thread_id == thread_id:
            return
        spans.thread_id = thread_id
        ids = {FLOWCORE_THREAD_ID: thread_id, GEN_AI_CONVERSATION_ID: thread_id}
        spans.run.set_attributes(ids)
        for open_nodes in spans.nodes.values():
            for span in open_nodes:
                span.set_attributes(ids)

    def _done(self, spans: _RunSpans, event: DoneEvent) -> None:
        end = _ns(event.timestamp)
        # Whatever is still open (a run cancelled mid-call) ends with the run.
        for open_tools in spans.tools.values():
            for span in open_tools:
                span.end(end)
        for open_nodes in spans.nodes.values():
            for span in open_nodes:
                span.set_attribute("flowcore.node.unfinished", True)
                span.end(end)
        run = spans.run
        run.set_attributes(
            {
                "flowcore.run.status": event.status,
                "gen_ai.usage.input_tokens": spans.input_tokens,
                "gen_ai.usage.output_tokens": spans.output_tokens,
            }
        )
        if event.status == "failed":
            first = event.errors[0] if event.errors else None
            run.set_attribute(ERROR_TYPE, type(first).__name__ if first else "_OTHER")
            self._error_status(run, str(first) if first else "run failed")
        run.end(end)
        del self._runs[event.run_id]

    def _error_status(self, span: Span, description: str) -> None:
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, description))

    def _common(self, spans: _RunSpans, event: Event) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            FLOWCORE_RUN_ID: event.run_id,
            FLOWCORE_GRAPH_NAME: spans.graph_name,
        }
        if spans.thread_id is not None:
            attrs[FLOWCORE_THREAD_ID] = spans.thread_id
            attrs[GEN_AI_CONVERSATION_ID] = spans.thread_id
        return attrs

    # ---------------------------------------------------------------- nodes
    def _parent_of(self, spans: _RunSpans, key: NodeKey) -> Span:
        open_nodes = spans.nodes.get(key)
        if open_nodes:
            return open_nodes[0]
        return self._outer(spans, key[0])

    def _outer(self, spans: _RunSpans, namespace: tuple[str, ...]) -> Span:
        if namespace:
            # A subgraph's node: its parent is the enclosing graph's task ("node:task").
            outer = spans.nodes.get((namespace[:-1], namespace[-1].split(":", 1)[0]))
            if outer:
                return outer[0]
        return spans.run

    def _node_start(self, spans: _RunSpans, key: NodeKey, event: NodeStartEvent) -> None:
        parent = self._outer(spans, key[0])
        attrs = self._common(spans, event)
        attrs[FLOWCORE_NODE] = event.node
        attrs["flowcore.superstep"] = event.superstep
        if event.namespace:
            attrs["flowcore.namespace"] = "|".join(event.namespace)
        span = self._tracer.start_span(
            f"node {event.node}",
            context=self._context_of(parent),
            attributes=attrs,
            start_time=_ns(event.timestamp),
        )
        spans.nodes.setdefault(key, []).append(span)

    def _take_node(self, spans: _RunSpans, key: NodeKey) -> Span | None:
        open_nodes = spans.nodes.get(key)
        if not open_nodes:
            return None
        span = open_nodes.pop(0)
        if not open_nodes:
            del spans.nodes[key]
        return span

    def _node_close(
        self, spans: _RunSpans, key: NodeKey, timestamp: float, attrs: dict[str, Any]
    ) -> None:
        span = self._take_node(spans, key)
        if span is not None:
            span.set_attributes(attrs)
            span.end(_ns(timestamp))

    def _node_error(self, spans: _RunSpans, key: NodeKey, event: NodeErrorEvent) -> None:
        span = self._take_node(spans, key)
        if span is None:
            return
        error = event.error
        # The root cause names the failure better than the NodeError wrapping it.
        cause = error.__cause__ if error.__cause__ is not None else error
        span.set_attributes(
            {"flowcore.node.attempts": event.attempts, ERROR_TYPE: type(cause).__name__}
        )
        span.record_exception(error, timestamp=_ns(event.timestamp))
        self._error_status(span, str(error))
        span.end(_ns(event.timestamp))

    def _block_start(self, spans: _RunSpans, key: NodeKey, event: BlockStartEvent) -> None:
        open_nodes = spans.nodes.get(key)
        if open_nodes:
            open_nodes[0].set_attributes(
                {
                    "flowcore.block.id": event.block_id,
                    "flowcore.block.version": event.block_version,
                    "flowcore.block.kind": event.kind,
                }
            )

    # ---------------------------------------------------------- model calls
    def _llm_call(self, spans: _RunSpans, key: NodeKey, event: UsageEvent) -> None:
        spans.input_tokens += event.input_tokens
        spans.output_tokens += event.output_tokens
        parent = self._parent_of(spans, key)
        end = event.timestamp
        started = end - event.duration if event.duration > 0 else spans.marks.get(key, end)
        attrs = self._common(spans, event)
        attrs[FLOWCORE_NODE] = event.node
        attrs.update(llm_attributes(event))
        span = self._tracer.start_span(
            llm_span_name(event),
            context=self._context_of(parent),
            kind=self._trace.SpanKind.CLIENT,
            attributes=attrs,
            start_time=_ns(started),
        )
        # A usage report of a call that failed (its tokens still count) carries the error.
        error = getattr(event, "error", None)
        if error:
            span.set_attribute(ERROR_TYPE, str(getattr(event, "error_type", "") or "_OTHER"))
            self._error_status(span, str(error))
        span.end(_ns(end))

    # ---------------------------------------------------------------- tools
    def _tool_start(self, spans: _RunSpans, key: NodeKey, event: ToolCallStartEvent) -> None:
        parent = self._parent_of(spans, key)
        attrs = self._common(spans, event)
        attrs[FLOWCORE_NODE] = event.node
        attrs.update(tool_attributes(event))
        span = self._tracer.start_span(
            tool_span_name(event),
            context=self._context_of(parent),
            attributes=attrs,
            start_time=_ns(event.timestamp),
        )
        spans.tools.setdefault((key, event.tool_call_id), []).append(span)

    def _tool_end(self, spans: _RunSpans, key: NodeKey, event: ToolCallResultEvent) -> None:
        open_calls = spans.tools.get((key, event.tool_call_id))
        if not open_calls:
            return
        span = open_calls.pop(0)
        if not open_calls:
            del spans.tools[(key, event.tool_call_id)]
        if event.is_error:
            span.set_attribute(ERROR_TYPE, event.error_code or "_OTHER")
            self._error_status(span, event.safe_message or event.error_code or "tool call failed")
        span.end(_ns(event.timestamp))


def enable(tracer_provider: TracerProvider | None = None, *, tracer: Any = None) -> Tracing:
    """A :class:`Tracing` for ``tracer_provider``, to put in a run's config.

    Nothing global is switched on: each run is traced when its config carries
    the returned object under ``"tracing"``.

    Example:
        >>> # from opentelemetry.sdk.trace import TracerProvider
        >>> # tracing = flowcore.tracing.enable(TracerProvider())
        >>> # await graph.run(inputs, config={"tracing": tracing})
    """
    return Tracing(tracer_provider, tracer=tracer)
