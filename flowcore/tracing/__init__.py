"""OpenTelemetry spans for flowcore runs (the optional ``flowcore[otel]`` extra).

A run is traced when its config carries a :class:`Tracing` under
``"tracing"``; nothing global is switched on and nothing of OpenTelemetry is
imported until a ``Tracing`` is created. Spans are derived from the run's
event stream: one per run (``invoke_workflow {graph}``), per node
(``node {name}``), per model call (``chat {model}``) and per tool call
(``execute_tool {tool}``), with the GenAI semantic-convention attributes and
flowcore's run, graph and thread ids. LangGraph-style runs
(``flowcore.compat.langgraph``) are traced the same way, from
``invoke``/``ainvoke``/``stream``/``astream``/``run_stream`` and the port.

Example:
    >>> # from opentelemetry.sdk.trace import TracerProvider
    >>> # import flowcore.tracing
    >>> # tracing = flowcore.tracing.enable(TracerProvider())
    >>> # result = await graph.run({"q": "hi"}, config={"tracing": tracing})
"""

from flowcore.scheduler.observers import TRACING_KEY, RunObserver
from flowcore.tracing._recorder import INSTRUMENTATION_NAME, Tracing, enable
from flowcore.tracing._tree import span_tree

__all__ = ["INSTRUMENTATION_NAME", "TRACING_KEY", "RunObserver", "Tracing", "enable", "span_tree"]
