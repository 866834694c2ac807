"""Scenario modules, one per theme; importing this package registers them all."""

from . import (
    basics,
    checkpoints,
    command,
    conditional,
    cycles,
    errors,
    interrupts,
    joins,
    messages,
    schemas,
    send,
    streams,
    subgraphs,
)

__all__ = [
    "basics",
    "checkpoints",
    "command",
    "conditional",
    "cycles",
    "errors",
    "interrupts",
    "joins",
    "messages",
    "schemas",
    "send",
    "streams",
    "subgraphs",
]
