"""The Thinker's prompts, stored as blocks: versioned and editable like any other block.

Each stage is an ``llm`` block (``thinker_clarify``, ``thinker_decompose``,
``thinker_create``, ``thinker_wire``) saved in the block registry with
``created_by: flowcore`` the first time the Thinker runs on that registry.
A registry that already holds one keeps it (an edited prompt is a newer
version, and stays the one used). Every prompt block takes the same inputs:
``request`` (the stage's task as JSON text), and for a repair round
``previous`` (the answer that failed) and ``problems`` (why it failed).
"""

from __future__ import annotations

from typing import Any

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.store import BlockNotFoundError, BlockStore
from flowcore.sandbox import ALLOWED_IMPORTS

__all__ = ["PROMPT_BLOCK_IDS", "ensure_prompt_blocks", "prompt_blocks"]

STAGES = ("clarify", "decompose", "create", "wire")
PROMPT_BLOCK_IDS = {stage: f"thinker_{stage}" for stage in STAGES}

_TAIL = """
<request>
{{ request }}
</request>
{% if problems %}
Your previous answer was:
<previous>
{{ previous }}
</previous>
It could not be used:
<problems>
{% for problem in problems %}- {{ problem }}
{% endfor %}</problems>
Answer again with the whole corrected JSON object.
{% endif %}"""

_INSTRUCTIONS = {
    "clarify": """THINKER STAGE: clarify
You decide whether a person's request is specific enough to build an automated
pipeline from. The request below holds the conversation so far ("messages",
oldest first) and "must_decide": when it is true you must answer ready.
Ready means: a clear action, and enough context to know the inputs and the output.
If it is not ready, ask exactly one short clarifying question.
If it is ready, synthesize the whole conversation into refined_intent: goal,
steps, inputs (parameters the person will pass at run time), outputs, edge_cases.
Answer {"ready": false, "question": "..."} or
{"ready": true, "refined_intent": {"goal": "...", "steps": [...], "inputs": [...],
 "outputs": [...], "edge_cases": [...]}}.""",
    "decompose": """THINKER STAGE: decompose
Break the intent below into the building blocks of a pipeline, in execution order.
For each block give: suggested_id (snake_case), description (one sentence saying
what it does, used to search the block registry), execution_type ("python" for
deterministic computation, "llm" for language understanding or writing),
depends_on (suggested_ids of earlier blocks whose outputs it reads), input_schema and
output_schema (JSON object schemas with typed properties and "required").
Prefer few, general blocks. Answer {"required_blocks": [...]}.""",
    "create": """THINKER STAGE: create
Write the missing block described in the request, as flowcore block JSON:
{"block": {"id", "name", "description", "kind": "python" | "llm", "input_schema",
"output_schema", "use_when", "tags", and "source_code" (python) or
"prompt_template" (llm, jinja2 placeholders like {{ '{{ text }}' }})},
"sample_inputs": {...inputs to test it on...}}.
Python source must define `async def execute(inputs, context) -> dict` returning
every output_schema property, and may import only: """
    + ", ".join(sorted(ALLOWED_IMPORTS))
    + """.
The block is compiled, policy-checked and run on sample_inputs in a sandbox; it
is saved only if that test passes.""",
    "wire": """THINKER STAGE: wire
Assemble the blocks listed in the request into a flowcore Pipeline JSON:
{"pipeline": {"id": "snake_case_id", "name": "...", "user_prompt": "...",
 "nodes": [{"id": "n1", "block_id": "...", "inputs": {...}}, ...],
 "edges": [{"from": "n1", "to": "n2"}]}}.
Each node's inputs must give every required input of its block: a run input is
written "<<input.name>>", an earlier node's output "<<n1.field>>" (never {{ '{{n1.field}}' }}).
Use only the block ids listed.""",
}

_ANSWERS: dict[str, dict[str, Any]] = {
    "clarify": {
        "type": "object",
        "properties": {"ready": {"type": "boolean"}},
        "required": ["ready"],
    },
    "decompose": {
        "type": "object",
        "properties": {"required_blocks": {"type": "array"}},
        "required": ["required_blocks"],
    },
    "create": {
        "type": "object",
        "properties": {"block": {"type": "object"}},
        "required": ["block"],
    },
    "wire": {
        "type": "object",
        "properties": {"pipeline": {"type": "object"}},
        "required": ["pipeline"],
    },
}

_INPUT = {
    "type": "object",
    "properties": {
        "request": {"type": "string"},
        "previous": {"type": "string"},
        "problems": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["request"],
}


def prompt_blocks() -> list[BlockDefinition]:
    """The Thinker's four prompt blocks, as first seeded.

    Example:
        >>> [b.id for b in prompt_blocks()]
        ['thinker_clarify', 'thinker_decompose', 'thinker_create', 'thinker_wire']
    """
    return [
        BlockDefinition(
            id=PROMPT_BLOCK_IDS[stage],
            name=f"Thinker {stage}",
            description=f"The Thinker's {stage} stage: one model call answering JSON.",
            kind="llm",
            input_schema=_INPUT,
            # Extra keys (a question, a refined intent) must reach the stage, not be dropped.
            output_schema={**_ANSWERS[stage], "additionalProperties": True},
            prompt_template=_INSTRUCTIONS[stage] + "\n" + _TAIL,
            # The stage validates and repairs the answer itself, with its own rounds.
            max_retries=0,
            timeout_seconds=180.0,
            temperature=0.0,
            category="thinker",
            tags=("thinker", stage),
            use_when="Used by the Thinker; not a block for pipelines.",
            created_by="flowcore",
        )
        for stage in STAGES
    ]


async def ensure_prompt_blocks(store: BlockStore) -> dict[str, BlockDefinition]:
    """The prompt block of each stage: the stored one, seeded on first use.

    Example:
        >>> # blocks = await ensure_prompt_blocks(registry)
        >>> # blocks["decompose"].id
        >>> # 'thinker_decompose'
    """
    found: dict[str, BlockDefinition] = {}
    for stage, block in zip(STAGES, prompt_blocks(), strict=True):
        try:
            found[stage] = await store.get(block.id)
        except BlockNotFoundError:
            found[stage] = await store.save(block)
    return found
