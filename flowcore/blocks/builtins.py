"""The blocks every new block store starts with."""

from __future__ import annotations

from typing import Any

from flowcore.blocks.definition import BlockDefinition

__all__ = ["builtin_blocks"]


def builtin_blocks() -> list[BlockDefinition]:
    """Fresh copies of the builtin blocks, seeded into a store on first open.

    Example:
        >>> sorted(b.id for b in builtin_blocks())[:2]
        ['classify', 'extract_json']
    """
    text_in = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    specs: list[dict[str, Any]] = [
        dict(
            id="query_memory",
            name="Query memory",
            description="Look up what the long-term store remembers about a query.",
            kind="memory_query",
            input_keys=["memory_query"],
            output_keys=["memory_results"],
            category="memory",
            tags=("memory", "recall"),
            use_when="A step needs the user's preferences, history or earlier results.",
        ),
        dict(
            id="save_memory",
            name="Save memory",
            description="Store a value in the long-term store under a key.",
            kind="memory_save",
            input_keys=["memory_key", "memory_value"],
            output_keys=["saved"],
            category="memory",
            tags=("memory", "persist"),
            use_when="A result should be remembered for later runs.",
        ),
        dict(
            id="summarize",
            name="Summarize",
            description="Summarize a text in a few sentences.",
            kind="llm",
            input_schema=text_in,
            output_schema={
                "type": "object",
                "properties": {"summary": {"type": "string"}},
                "required": ["summary"],
            },
            prompt_template="Summarize the following text in at most three sentences.\n\n"
            "{{ text }}",
            category="process",
            tags=("text", "summary"),
            use_when="A long text must be shortened before the next step reads it.",
        ),
        dict(
            id="extract_json",
            name="Extract JSON",
            description="Pull structured fields out of free text.",
            kind="llm",
            input_schema={
                "type": "object",
                "properties": {"text": {"type": "string"}, "fields": {"type": "array"}},
                "required": ["text", "fields"],
            },
            output_schema={"type": "object", "properties": {"data": {"type": "object"}}},
            prompt_template="Extract these fields: {{ fields | join(', ') }}.\n\nText:\n"
            '{{ text }}\n\nAnswer as JSON: {"data": {...}}.',
            category="process",
            tags=("json", "extraction"),
            use_when="Free text holds values a later step needs as data.",
        ),
        dict(
            id="classify",
            name="Classify",
            description="Decide which of several labels fits a text.",
            kind="decision",
            input_schema=text_in,
            output_schema={
                "type": "object",
                "properties": {"branch": {"type": "string"}},
                "required": ["branch"],
            },
            prompt_template="Does this text need an answer? Reply yes or no.\n\n{{ text }}",
            branches={"yes": "answer", "no": "skip"},
            category="process",
            tags=("decision", "routing"),
            use_when="The next step depends on what kind of input arrived.",
        ),
        dict(
            id="http_get",
            name="HTTP GET",
            description="Fetch a URL and return its status and body.",
            kind="tool",
            tool="http_get",
            network=True,
            input_keys=["url"],
            output_keys=["status", "body"],
            category="action",
            tags=("http", "web", "fetch"),
            use_when="A step needs the content of a web page or API.",
        ),
        dict(
            id="human_approval",
            name="Human approval",
            description="Pause the run until a person approves or rejects.",
            kind="human",
            input_keys=["question"],
            output_keys=["approved"],
            category="input",
            tags=("human", "approval", "review"),
            use_when="A person must confirm before an irreversible action.",
        ),
    ]
    return [BlockDefinition.from_data(spec) for spec in specs]
