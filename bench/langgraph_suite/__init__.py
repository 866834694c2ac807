"""Runs LangGraph's own test suite against flowcore.compat.langgraph; see README.md."""
