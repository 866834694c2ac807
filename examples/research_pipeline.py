"""A research assistant as a flowcore graph, driven by an offline stand-in for an LLM.

    python examples/research_pipeline.py
    python examples/research_pipeline.py --mode dataflow --max-revisions 1

The graph::

    START -> planner -+-> research_background -+
                      +-> research_methods    -+-> draft -> critique --> write -> END
                      +-> research_pitfalls   -+            ^     |
                                                            |     | needs work
                                                            +- revise <-+

* ``planner`` turns the question into a topic and three research angles.
* The three ``research_*`` nodes run in parallel (a fan-out). They share one
  function; each reads its own angle from ``ctx.inputs``, where the
  ``<<planner.topic>>`` / ``<<planner.angles.N>>`` references have been
  resolved against the planner's output.
* ``draft`` is a join: it waits for all three researchers.
* ``critique`` reviews the draft; a conditional edge loops back through
  ``revise`` until the critic approves or ``max_revisions`` is reached, then
  exits to ``write``.
* Researchers report progress with ``ctx.emit``; the script streams every
  event and prints one line per step as it happens.

The "model" is :func:`fake_llm`: a few lines of deterministic Python that
build answers from the prompt, so the example needs no network and no API
key, and prints the same thing on every run. Swap it for a real client call
and the graph stays the same.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import textwrap
from typing import Annotated, Any, Literal, TypedDict, cast

from flowcore import (
    END,
    START,
    CompiledGraph,
    CustomEvent,
    Event,
    Graph,
    NodeContext,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    RunResult,
    append,
    merge,
)

QUESTION = "How do graph engines keep parallel LLM agents deterministic?"
ANGLES = ("background", "methods", "pitfalls")

# ----------------------------------------------------------------- the "model"

# What the fake model "knows" about each research angle.
_KNOWLEDGE = {
    "background": (
        "agents that share state race each other unless writes are ordered",
        "notes/background.md",
    ),
    "methods": (
        "parallel steps run in batches and their writes are applied in a fixed order",
        "notes/methods.md",
    ),
    "pitfalls": (
        "two steps overwriting the same field make the result depend on timing",
        "notes/pitfalls.md",
    ),
}
# What the fake critic checks a draft for, and how the fake reviser fixes it.
_CHECKLIST = (
    (
        "For example",
        "add a concrete example",
        "For example, three researchers that finish in any order still produce the "
        "same list of findings.",
    ),
    (
        "trade-off",
        "name the trade-off",
        "The trade-off: a batch waits for its slowest step before the next one starts.",
    ),
)


async def fake_llm(prompt: str) -> str:
    """Pretend to be a chat model: answer from the prompt alone, deterministically.

    The first line of the prompt says what is asked (``plan``, ``research``,
    ``draft``, ``critique`` or ``revise``); the rest is the material.
    """
    await asyncio.sleep(0)  # where a real client would await the network
    task, _, body = prompt.partition("\n")
    if task == "plan":
        topic = body.strip().rstrip("?").removeprefix("How do ").strip()
        return json.dumps({"topic": topic, "angles": list(ANGLES)})
    if task == "research":
        topic, angle = body.split("\n")
        fact, source = _KNOWLEDGE[angle]
        return json.dumps({"finding": f"On {angle}: {fact}.", "source": source})
    if task == "draft":
        topic, *findings = body.split("\n")
        return f"{topic[0].upper()}{topic[1:]}: " + " ".join(findings)
    if task == "critique":
        for marker, advice, _ in _CHECKLIST:
            if marker not in body:
                return f"REVISE: {advice}"
        return "APPROVE"
    if task == "revise":
        draft, advice = body.rsplit("\n", 1)
        fix = next(fix for _, adv, fix in _CHECKLIST if adv == advice)
        return f"{draft} {fix}"
    raise ValueError(f"fake_llm does not know the task {task!r}")


# ---------------------------------------------------------------------- state


class ResearchState(TypedDict):
    question: str
    topic: str
    angles: list[str]
    findings: Annotated[list[str], append]  # parallel researchers append, in declaration order
    sources: Annotated[dict[str, str], merge]  # angle -> source, merged
    draft: str
    feedback: Annotated[list[str], append]
    approved: bool
    revisions: Annotated[int, operator.add]  # a custom reducer: writes are added up
    answer: str


# ---------------------------------------------------------------------- nodes


async def planner(state: ResearchState) -> dict[str, Any]:
    plan = json.loads(await fake_llm(f"plan\n{state['question']}"))
    return {"topic": plan["topic"], "angles": plan["angles"]}


async def research(state: ResearchState, ctx: NodeContext) -> dict[str, Any]:
    topic, angle = ctx.inputs["topic"], ctx.inputs["angle"]
    ctx.emit("progress", f"searching {angle!r}")
    result = json.loads(await fake_llm(f"research\n{topic}\n{angle}"))
    ctx.emit("progress", f"found 1 note in {result['source']}")
    return {"findings": [result["finding"]], "sources": {angle: result["source"]}}


async def draft(state: ResearchState) -> dict[str, Any]:
    text = await fake_llm("draft\n" + "\n".join([state["topic"], *state["findings"]]))
    return {"draft": text, "approved": False}


async def critique(state: ResearchState) -> dict[str, Any]:
    verdict = await fake_llm(f"critique\n{state['draft']}")
    if verdict == "APPROVE":
        return {"approved": True}
    return {"feedback": [verdict.removeprefix("REVISE: ")]}


def after_critique(state: ResearchState, ctx: NodeContext) -> Literal["revise", "write"]:
    """Loop back through ``revise`` until approved, at most ``max_revisions`` times."""
    if state["approved"] or state["revisions"] >= ctx.config["max_revisions"]:
        return "write"
    return "revise"


async def revise(state: ResearchState) -> dict[str, Any]:
    text = await fake_llm(f"revise\n{state['draft']}\n{state['feedback'][-1]}")
    return {"draft": text, "revisions": 1}


def write(state: ResearchState) -> dict[str, Any]:
    # A plain sync node: flowcore runs it in a worker thread.
    sources = ", ".join(state["sources"][angle] for angle in state["angles"])
    return {"answer": f"{state['draft']}\n(sources: {sources})"}


def build_graph() -> CompiledGraph:
    graph = Graph(ResearchState, name="research_pipeline")
    graph.add_node("planner", planner)
    for index, angle in enumerate(ANGLES):
        graph.add_node(
            f"research_{angle}",
            research,
            inputs={"topic": "<<planner.topic>>", "angle": f"<<planner.angles.{index}>>"},
        )
    graph.add_node("draft", draft)
    graph.add_node("critique", critique)
    graph.add_node("revise", revise)
    graph.add_node("write", write)

    graph.add_edge(START, "planner")
    for angle in ANGLES:
        graph.add_edge("planner", f"research_{angle}")  # fan-out
    graph.add_edge([f"research_{angle}" for angle in ANGLES], "draft")  # join
    graph.add_edge("draft", "critique")
    graph.add_conditional_edges("critique", after_critique)
    graph.add_edge("revise", "critique")  # the loop's back edge
    graph.add_edge("write", END)
    return graph.compile()


# ------------------------------------------------------------------- running


def describe(event: Event) -> str | None:
    """One progress line per event worth showing (ids and timings left out)."""
    step = f"step {event.superstep:>2}"
    if isinstance(event, NodeEndEvent):
        wrote = ", ".join(sorted(event.update or {})) or "nothing"
        return f"{step}  {event.node:<20} done      wrote {wrote}"
    if isinstance(event, CustomEvent):
        return f"{step}  {event.node:<20} {event.name:<9} {event.data}"
    if isinstance(event, NodeSkippedEvent):
        return f"{step}  {event.node:<20} skipped   ({event.reason.replace('_', ' ')})"
    if isinstance(event, NodeErrorEvent):
        return f"{step}  {event.node:<20} FAILED    {event.error}"
    return None


async def main(mode: Literal["supersteps", "dataflow"], max_revisions: int) -> RunResult:
    graph = build_graph()
    print(f"question: {QUESTION}")
    print(f"mode: {mode}, at most {max_revisions} revision(s)\n")
    async with graph.stream(
        {"question": QUESTION},
        mode=mode,
        run_id="research-demo",
        config={"max_revisions": max_revisions},
    ) as events:
        async for event in events:
            line = describe(event)
            if line is not None:
                print(line, flush=True)
        result = await events.result()

    print("\nFinal answer:")
    for paragraph in result.state.get("answer", "(none)").splitlines():
        print(textwrap.fill(paragraph, width=88, break_on_hyphens=False))
    ran = [run for run in result.node_runs if run.status == "completed"]
    skipped = [run for run in result.node_runs if run.status == "skipped"]
    print("\nSummary:")
    print(f"  status:      {result.status}")
    print(f"  supersteps:  {result.supersteps}")
    print(f"  passes:      {max(run.pass_index for run in result.node_runs)}")
    print(f"  nodes run:   {len(ran)} ({len(skipped)} skipped)")
    print(f"  revisions:   {result.state['revisions']}")
    for error in result.errors:
        print(f"  error:       {error}")
    return result


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mode", choices=["supersteps", "dataflow"], default="supersteps")
    parser.add_argument("--max-revisions", type=int, default=3)
    args = parser.parse_args()
    mode = cast(Literal["supersteps", "dataflow"], args.mode)
    result = asyncio.run(main(mode, args.max_revisions))
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(cli())
