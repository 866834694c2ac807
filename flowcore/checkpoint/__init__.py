"""Durable execution: checkpoint stores, their records and serialization."""

from flowcore.checkpoint.memory import InMemoryCheckpointer
from flowcore.checkpoint.protocol import (
    BatchCheckpointer,
    Checkpoint,
    Checkpointer,
    MaintainableCheckpointer,
    PendingWrite,
    StoreItem,
    WriteAt,
    WriteGroup,
)
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.checkpoint.sqlite import SqliteCheckpointer

__all__ = [
    "BatchCheckpointer",
    "Checkpoint",
    "Checkpointer",
    "InMemoryCheckpointer",
    "JsonSerializer",
    "MaintainableCheckpointer",
    "PendingWrite",
    "Serializer",
    "SqliteCheckpointer",
    "StoreItem",
    "WriteAt",
    "WriteGroup",
]
