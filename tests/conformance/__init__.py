"""Differential conformance suite: the same LangGraph programs on langgraph and on flowcore."""
