"""Graph definition: the builder, the compiled graph, and their parts."""

from flowcore.graph.builder import Graph
from flowcore.graph.compiled import CompiledGraph, RunStream
from flowcore.graph.constants import END, START
from flowcore.graph.policy import RetryPolicy

__all__ = ["END", "START", "CompiledGraph", "Graph", "RetryPolicy", "RunStream"]
