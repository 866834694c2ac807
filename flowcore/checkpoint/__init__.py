"""Durable execution: checkpoint stores, their records and serialization."""

from flowcore.checkpoint.memory import InMemoryCheckpointer
from flowcore.checkpoint.protocol import Checkpoint, Checkpointer, PendingWrite, WriteGroup
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.checkpoint.sqlite import SqliteCheckpointer

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "InMemoryCheckpointer",
    "JsonSerializer",
    "PendingWrite",
    "Serializer",
    "SqliteCheckpointer",
    "WriteGroup",
]
