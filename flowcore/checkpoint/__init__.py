"""Durable execution: checkpoint stores, their records, serialization and thread leases.

The leases here are what a store keeps (:class:`ThreadLease`,
:class:`LeasingCheckpointer`, :data:`DEFAULT_LEASE_TTL`); keeping one for a
run is :mod:`flowcore.runtime.leases`, which this package does not load.
"""

from flowcore.checkpoint.lease import DEFAULT_LEASE_TTL
from flowcore.checkpoint.memory import InMemoryCheckpointer
from flowcore.checkpoint.protocol import (
    BatchCheckpointer,
    Checkpoint,
    Checkpointer,
    LeasingCheckpointer,
    MaintainableCheckpointer,
    PendingWrite,
    StoreItem,
    ThreadLease,
    WriteAt,
    WriteGroup,
)
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.checkpoint.sqlite import SqliteCheckpointer

__all__ = [
    "DEFAULT_LEASE_TTL",
    "BatchCheckpointer",
    "Checkpoint",
    "Checkpointer",
    "InMemoryCheckpointer",
    "JsonSerializer",
    "LeasingCheckpointer",
    "MaintainableCheckpointer",
    "PendingWrite",
    "Serializer",
    "SqliteCheckpointer",
    "StoreItem",
    "ThreadLease",
    "WriteAt",
    "WriteGroup",
]
