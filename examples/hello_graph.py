"""The smallest useful flowcore graph: two parallel nodes and a join.

This is the code sample of the README, kept runnable here (a test checks the
two stay identical). Run it with ``python examples/hello_graph.py``.
"""

from typing import Annotated, TypedDict

from flowcore import END, START, Graph, append


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], append]  # parallel writes are appended, in declaration order


async def search_web(state):
    return {"notes": [f"web: {state['topic']}"]}


async def search_docs(state):
    return {"notes": [f"docs: {state['topic']}"]}


def summarize(state):
    return {"notes": [f"summary of {len(state['notes'])} notes"]}


graph = Graph(State, name="research")
graph.add_node("search_web", search_web).add_node("search_docs", search_docs)
graph.add_node("summarize", summarize)
graph.add_edge(START, "search_web").add_edge(START, "search_docs")
graph.add_edge(["search_web", "search_docs"], "summarize")  # a join: waits for both
graph.add_edge("summarize", END)

result = graph.compile().run_sync({"topic": "graph engines"})
print(result.state["notes"])
