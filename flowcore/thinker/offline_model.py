"""``ThinkerModel``: a deterministic stand-in model for the Thinker's four stages.

With no API key, ``flowcore create`` still runs end to end: this provider
answers the Thinker's prompt blocks (it recognises them by their
``THINKER STAGE:`` line) from the request in the prompt and the
capabilities of :mod:`flowcore.thinker.catalog`, and hands every other
request (the LLM blocks of the pipelines it builds) to ``fallback``, the
:class:`~flowcore.llm.OfflineProvider` by default.

``faults`` makes it answer wrongly the way real models do, for tests and
the evaluation: a malformed decomposition, Python that fails its test or
the sandbox policy, a pipeline with seed 003's ``{{n1.x}}`` references.
A fault is answered only to a first-round prompt; the corrected answer is
given only when the prompt lists the problems of the previous answer, so
the Thinker gets a right answer only if its repair round works.
``never_create`` names blocks whose code is always refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from flowcore.llm.offline import OfflineProvider
from flowcore.llm.protocol import LLMProvider
from flowcore.llm.types import LLMRequest, LLMResponse, StreamEvent, Usage
from flowcore.thinker.catalog import CATALOG, Capability, find_capabilities

__all__ = ["Faults", "ThinkerModel"]

_STAGE = re.compile(r"THINKER STAGE: (\w+)")
_REQUEST = re.compile(r"<request>\s*(.*?)\s*</request>", re.DOTALL)
_WORD = re.compile(r"[a-z0-9]+")
_CONTENT_MIN = 12  # words the person must have written before the request counts as specific


@dataclass(slots=True)
class Faults:
    """How many first answers of each kind are wrong (each is used up once answered).

    Example:
        >>> Faults(wire=1).wire
        1
    """

    decompose: int = 0
    create_bug: int = 0
    create_policy: int = 0
    wire: int = 0
    never_create: tuple[str, ...] = ()


class ThinkerModel:
    """Answers Thinker stage prompts deterministically; passes other requests to ``fallback``.

    ``requests`` counts the stage prompts answered, by stage.

    Example:
        >>> model = ThinkerModel()
        >>> model.name
        'thinker-offline'
    """

    def __init__(
        self,
        *,
        fallback: LLMProvider | None = None,
        faults: Faults | None = None,
        name: str = "thinker-offline",
    ) -> None:
        self.name = name
        self.fallback = fallback or OfflineProvider()
        self.faults = faults or Faults()
        self.requests: dict[str, int] = {}

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The answer to ``request``, whole.

        Example:
            >>> # response = await ThinkerModel().complete(request)
        """
        stage, prompt = _stage_of(request)
        if stage is None:
            return await self.fallback.complete(request)
        return self._answer(request, stage, prompt)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """The same answer as :meth:`complete`, in words, then usage and done.

        Example:
            >>> # async for event in ThinkerModel().stream(request): ...
        """
        stage, prompt = _stage_of(request)
        if stage is None:
            async for event in self.fallback.stream(request):
                yield event
            return
        response = self._answer(request, stage, prompt)
        for i, word in enumerate(response.text.split(" ")):
            yield StreamEvent(kind="text", text=word if i == 0 else f" {word}")
        yield StreamEvent(kind="usage", usage=response.usage)
        yield StreamEvent(kind="done", response=response)

    # ------------------------------------------------------------- answering
    def _answer(self, request: LLMRequest, stage: str, prompt: str) -> LLMResponse:
        self.requests[stage] = self.requests.get(stage, 0) + 1
        match = _REQUEST.search(prompt)
        try:
            task = json.loads(match.group(1)) if match else {}
        except ValueError:
            task = {}
        repair = "<problems>" in prompt
        problems = prompt.split("<problems>", 1)[1] if repair else ""
        answer: dict[str, Any]
        if stage == "clarify":
            answer = _clarify(task)
        elif stage == "decompose":
            answer = _decompose(str(task.get("intent", "")))
            if not repair and self.faults.decompose > 0:
                self.faults.decompose -= 1
                answer = _bad_decomposition(answer)
        elif stage == "create":
            answer = self._create(task.get("spec") or {}, repair, problems)
        elif stage == "wire":
            answer = _wire(task)
            if not repair and self.faults.wire > 0:
                self.faults.wire -= 1
                answer = _seed_references(answer)
        else:
            answer = {"error": f"unknown stage {stage}"}
        text = json.dumps(answer, ensure_ascii=False)
        words_in = len((request.system or "").split()) + len(prompt.split())
        return LLMResponse(
            text=text,
            usage=Usage(words_in, len(text.split())),
            model=request.model or self.name,
            finish_reason="stop",
        )

    def _create(self, spec: dict[str, Any], repair: bool, problems: str) -> dict[str, Any]:
        key = str(spec.get("suggested_id") or "new_block")
        capability = next((c for c in CATALOG if c.key == key), None)
        answer = _draft(spec, capability)
        block = answer["block"]
        if "already a stored block" in problems:
            block["id"] = f"{block['id']}_2"
        if key in self.faults.never_create and block["kind"] == "python":
            # Always reaches for a module the sandbox refuses, whatever it is told.
            block["source_code"] = "import subprocess\n" + block["source_code"]
            return answer
        if not repair and block["kind"] == "python":
            if self.faults.create_policy > 0:
                self.faults.create_policy -= 1
                block["source_code"] = "import subprocess\n" + block["source_code"]
            elif self.faults.create_bug > 0:
                self.faults.create_bug -= 1
                # Returns its result under the wrong name: the output check fails the test.
                block["source_code"] = (
                    "async def execute(inputs, context):\n    return {'result': None}\n"
                )
        return answer


def _stage_of(request: LLMRequest) -> tuple[str | None, str]:
    prompt = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    match = _STAGE.search(prompt)
    return (match.group(1) if match else None), prompt


# ------------------------------------------------------------------ clarify
def _clarify(task: dict[str, Any]) -> dict[str, Any]:
    messages = [m for m in task.get("messages") or [] if isinstance(m, dict)]
    said = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    words = sum(len(_WORD.findall(s.lower())) for s in said)
    capabilities = find_capabilities(" ".join(said))
    specific = words >= _CONTENT_MIN and capabilities
    if not task.get("must_decide") and not specific:
        if len(said) <= 1:
            question = "What will you give it as input, and what should it produce?"
        else:
            question = "Which steps should it take, e.g. summarize, count the words, translate?"
        return {"ready": False, "question": question}
    first = said[0] if said else "Process a text"
    inputs = sorted({name for c in capabilities[:1] for name in c.inputs}) or ["text"]
    outputs = [name for c in capabilities[-1:] for name in c.outputs] or ["result"]
    return {
        "ready": True,
        "refined_intent": {
            "goal": first.rstrip(".") + (": " + "; ".join(said[1:]) if len(said) > 1 else ""),
            "steps": [c.description for c in capabilities] or [first],
            "inputs": inputs,
            "outputs": outputs,
            "edge_cases": ["empty input gives an empty or zero result"],
        },
    }


# ---------------------------------------------------------------- decompose
def _generic() -> Capability:
    return Capability(
        "answer_request",
        (),
        "Carry out the request on a text and answer in words.",
        "llm",
        {"text": "string"},
        {"result": "string"},
        {"text": "example"},
        prompt="Carry out this request on the text and answer briefly.\n\n{{ text }}",
    )


def _decompose(intent: str) -> dict[str, Any]:
    capabilities = find_capabilities(intent) or [_generic()]
    blocks = []
    previous: str | None = None
    for capability in capabilities:
        blocks.append(
            {
                "suggested_id": capability.key,
                "description": capability.description,
                "execution_type": capability.kind,
                "depends_on": [previous] if previous else [],
                "input_schema": capability.schema(capability.inputs),
                "output_schema": capability.schema(capability.outputs),
            }
        )
        previous = capability.key
    return {"required_blocks": blocks}


def _bad_decomposition(answer: dict[str, Any]) -> dict[str, Any]:
    # Typical slips: an execution type flowcore has no name for, a dependency on
    # a step it never listed, an output schema left empty.
    blocks = [dict(b) for b in answer["required_blocks"]]
    blocks[0]["execution_type"] = "code"
    blocks[0]["depends_on"] = ["load_input"]
    blocks[-1]["output_schema"] = {"type": "object"}
    return {"required_blocks": blocks}


# ------------------------------------------------------------------- create
def _sample(schema: dict[str, Any]) -> dict[str, Any]:
    samples = {
        "string": "example text",
        "integer": 3,
        "number": 2.5,
        "array": [1, 2],
        "boolean": True,
        "object": {},
    }
    props = schema.get("properties") or {}
    return {k: samples.get(str(v.get("type")), "example") for k, v in props.items()}


def _draft(spec: dict[str, Any], capability: Capability | None) -> dict[str, Any]:
    capability = capability or _generic()
    inputs = spec.get("input_schema") or capability.schema(capability.inputs)
    outputs = spec.get("output_schema") or capability.schema(capability.outputs)
    kind = capability.kind if capability.key == spec.get("suggested_id") else "llm"
    block: dict[str, Any] = {
        "id": str(spec.get("suggested_id") or capability.key),
        "name": str(spec.get("suggested_id") or capability.key).replace("_", " ").capitalize(),
        "description": str(spec.get("description") or capability.description),
        "kind": kind,
        "input_schema": inputs,
        "output_schema": outputs,
        "use_when": str(spec.get("description") or capability.description),
        "tags": list(capability.tags),
        "category": "process",
    }
    if kind == "python" and capability.source is not None:
        block["source_code"] = capability.source
        sample = dict(capability.sample)
    else:
        block["kind"] = "llm"
        names = list((inputs.get("properties") or {}).keys())
        body = "\n".join(f"{n}: {{{{ {n} }}}}" for n in names)
        block["prompt_template"] = (
            capability.prompt
            if capability.prompt is not None and capability.key == spec.get("suggested_id")
            else f"{block['description']}\n\n{body}"
        )
        sample = dict(capability.sample) if capability.key == spec.get("suggested_id") else {}
    return {"block": block, "sample_inputs": sample or _sample(inputs)}


# --------------------------------------------------------------------- wire
def _pipeline_id(intent: str) -> str:
    words = [w for w in _WORD.findall(intent.lower()) if len(w) > 3][:4] or ["thinker"]
    return "_".join(words) + "_pipeline"


def _wire(task: dict[str, Any]) -> dict[str, Any]:
    intent = str(task.get("intent", ""))
    cards: Sequence[dict[str, Any]] = [c for c in task.get("blocks") or [] if isinstance(c, dict)]
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, str]] = []
    for index, card in enumerate(cards, start=1):
        node_id = f"n{index}"
        inputs: dict[str, Any] = {}
        schema = card.get("input_schema") or {}
        upstream = nodes[-1] if nodes else None
        upstream_out = (
            (cards[index - 2].get("output_schema") or {}).get("properties", {}) if upstream else {}
        )
        for name, prop in (schema.get("properties") or {}).items():
            source = None
            if upstream is not None:
                if name in upstream_out:
                    source = name
                else:
                    same = [k for k, v in upstream_out.items() if v.get("type") == prop.get("type")]
                    source = same[0] if same else None
            if source is not None and upstream is not None:
                inputs[name] = f"<<{upstream['id']}.{source}>>"
            else:
                inputs[name] = f"<<input.{name}>>"
        if upstream is not None:
            edges.append({"from": upstream["id"], "to": node_id})
        nodes.append({"id": node_id, "block_id": card.get("block_id"), "inputs": inputs})
    title = intent.splitlines()[0] if intent else "Thinker pipeline"
    return {
        "pipeline": {
            "id": _pipeline_id(title.removeprefix("Goal: ")),
            "name": title.removeprefix("Goal: ")[:80],
            "user_prompt": intent,
            "nodes": nodes,
            "edges": edges,
        }
    }


def _seed_references(answer: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(answer)
    # Seed 003 spelled references {{n1.field}}: flowcore's validator refuses them.
    return dict(json.loads(re.sub(r"<<([^<>]+)>>", r"{{\1}}", text)))
