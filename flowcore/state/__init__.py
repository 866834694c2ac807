"""State schemas and reducers."""

from flowcore.state.reducers import Reducer, append, merge, replace
from flowcore.state.schema import StateSchema

__all__ = ["Reducer", "StateSchema", "append", "merge", "replace"]
