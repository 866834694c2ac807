"""The executor-port conformance kit run against two implementations."""
