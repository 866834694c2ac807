"""Graph definition: the builder, the compiled graph, and their parts."""

from flowcore.graph.builder import Graph
from flowcore.graph.commands import Command, Send
from flowcore.graph.compiled import CompiledGraph, RunStream
from flowcore.graph.constants import END, START
from flowcore.graph.policy import RetryPolicy

__all__ = ["END", "START", "Command", "CompiledGraph", "Graph", "RetryPolicy", "RunStream", "Send"]
