"""One tool-loop run traced with OpenTelemetry, printed as its span tree.

    pip install 'flowcore[otel]'
    python examples/traced_agent.py

Two agents run in parallel, each an LLM block that may call tools: the
researcher asks for two look-ups at once, then one more, then answers; the
forecaster asks for one forecast, then answers. A plain node joins their
answers. ``flowcore.tracing.enable(provider)`` in the run's config records
the run as spans (the SDK's in-memory exporter holds them here; any
exporter works), and ``span_tree`` prints them: the run, each node under
it, and each model call and tool call under its node.

A ScriptedProvider stands in for the model, so the tree is the same on every
run.
"""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import flowcore.tracing
from flowcore import END, START, Graph
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block
from flowcore.llm import LLMResponse, ProviderRegistry, ScriptedProvider, ToolCall, Usage
from flowcore.tools import Tool, ToolRunner


class Query(BaseModel):
    topic: str


class Found(BaseModel):
    facts: list[str]


class Place(BaseModel):
    city: str


class Forecast(BaseModel):
    sky: str


async def lookup(args: Query) -> Found:
    return Found(facts=[f"{args.topic} is well documented"])


async def forecast(args: Place) -> Forecast:
    return Forecast(sky="clear")


TOOLS = ToolRunner(
    [
        Tool("lookup", "Look a topic up", Query, Found, lookup, allowlist={"facts"}),
        Tool("forecast", "Tomorrow's sky", Place, Forecast, forecast, allowlist={"sky"}),
    ]
)


def asks(*calls: tuple[str, str, dict[str, Any]]) -> LLMResponse:
    """A model turn that only asks for tool calls."""
    return LLMResponse(
        tool_calls=tuple(ToolCall(i, name, args) for i, name, args in calls),
        usage=Usage(40, 12),
        model="scripted-1",
        finish_reason="tool_calls",
    )


def answers(text: str) -> LLMResponse:
    return LLMResponse(text=text, usage=Usage(60, 9), model="scripted-1", finish_reason="stop")


def agent(block_id: str, tools: list[str], script: list[LLMResponse]) -> tuple[Any, ...]:
    block = BlockDefinition(
        id=block_id,
        name=block_id,
        description=f"the {block_id} agent",
        kind="llm",
        input_keys=["question"],
        output_keys=["answer"],
        prompt_template="{{ question }}",
        model="scripted-1",
        metadata={"tools": tools},
    )
    executor = BlockExecutor(
        providers=ProviderRegistry.single(ScriptedProvider(script)), tools=TOOLS
    )
    return block, executor


class TripState(BlockState, total=False):
    question: str
    summary: str


def build() -> Any:
    """The graph: researcher and forecaster in parallel, then a join."""
    researcher = agent(
        "researcher",
        ["lookup"],
        [
            asks(
                ("call-a", "lookup", {"topic": "Lisbon trams"}),
                ("call-b", "lookup", {"topic": "Lisbon food"}),
            ),
            asks(("call-c", "lookup", {"topic": "Lisbon museums"})),
            answers('{"answer": "Ride tram 28, eat pasteis, see the azulejo museum."}'),
        ],
    )
    forecaster = agent(
        "forecaster",
        ["forecast"],
        [
            asks(("call-d", "forecast", {"city": "Lisbon"})),
            answers('{"answer": "Clear skies tomorrow."}'),
        ],
    )

    def join(state: Any) -> dict[str, Any]:
        results = state["results"]
        return {"summary": f"{results['researcher']['answer']} {results['forecaster']['answer']}"}

    graph = Graph(TripState, name="trip_planner")
    for name, (block, executor) in (("researcher", researcher), ("forecaster", forecaster)):
        add_block(graph, name, block, executor, inputs={"question": "<<state.question>>"})
        graph.add_edge(START, name).add_edge(name, "join")
    graph.add_node("join", join).add_edge("join", END)
    return graph.compile()


async def main() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = flowcore.tracing.enable(provider)

    result = await build().run(
        {"question": "A day in Lisbon?"}, config={"tracing": tracing}, run_id="run-1"
    )
    print(f"status: {result.status}")
    print(f"summary: {result.state['summary']}\n")
    print(flowcore.tracing.span_tree(exporter.get_finished_spans()))
    return exporter


if __name__ == "__main__":
    asyncio.run(main())
