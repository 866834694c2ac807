"""Durable execution: checkpoint stores, their records and serialization."""

from flowcore.checkpoint.memory import InMemoryCheckpointer
from flowcore.checkpoint.protocol import (
    Checkpoint,
    Checkpointer,
    MaintainableCheckpointer,
    PendingWrite,
    WriteGroup,
)
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.checkpoint.sqlite import SqliteCheckpointer

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "InMemoryCheckpointer",
    "JsonSerializer",
    "MaintainableCheckpointer",
    "PendingWrite",
    "Serializer",
    "SqliteCheckpointer",
    "WriteGroup",
]
