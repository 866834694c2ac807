"""Long-term memory shared across runs: the namespaced ``Store``."""

from flowcore.memory.manager import MemoryManager
from flowcore.memory.sqlite import SqliteStore
from flowcore.memory.store import InMemoryStore, MemoryItem, Namespace, Store, check_namespace

__all__ = [
    "InMemoryStore",
    "MemoryItem",
    "MemoryManager",
    "Namespace",
    "SqliteStore",
    "Store",
    "check_namespace",
]
