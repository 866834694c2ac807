"""Long-term memory shared across runs: the namespaced ``Store``."""

from flowcore.memory.store import InMemoryStore, MemoryItem, Namespace, Store, check_namespace

__all__ = ["InMemoryStore", "MemoryItem", "Namespace", "Store", "check_namespace"]
