"""``BlockDefinition``: a reusable step, stored as data and run by one generic executor.

A block is created once, saved in a block store, and reused by many agents.
It says what it needs (``input_schema``), what it produces
(``output_schema``) and how it runs (``kind`` plus the field that kind
needs: a prompt, Python source, a tool name, branches). Definitions are pure
data: no I/O happens here, and a definition that cannot run is refused when
it is built, with a message naming the field and the fix.

A property of ``input_schema`` or ``output_schema`` marked ``"secret": true``
(or JSON Schema's ``"writeOnly": true``) holds a secret: the block executor
tells the run's redactor the value of such an input, shows it as
``"[REDACTED]"`` wherever the block itself reports it, and wraps such an
output in a :class:`~flowcore.secrets.Secret` before it enters state.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from flowcore.blocks.templates import TemplateFormat, TemplateRenderError, check_template
from flowcore.budgets.limits import Budget
from flowcore.errors import BlockDefinitionError

__all__ = ["BlockDefinition", "BlockExample", "BlockKind"]

BlockKind = Literal[
    "llm", "python", "tool", "decision", "memory_query", "memory_save", "human", "wait"
]
"""How a block runs; each kind needs its own field (see :class:`BlockDefinition`)."""

_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{0,127}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_JSON_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}
# Names from the seeds' formats, accepted on input and stored under flowcore's names.
_ALIASES = {
    "block_id": "id",
    "block_type": "kind",
    "execution_type": "kind",
    "llm_provider": "provider",
    "llm_model": "model",
}
# Seed 000's block types that are flowcore kinds under another name: an "action" and an
# "extraction" both ask the model for the block's output keys from its input keys.
_SEED_KINDS = {"action": "llm", "extraction": "llm", "query_memory": "memory_query"}
# Kinds that call a model, and so can offer it tools.
_MODEL_KINDS = frozenset({"llm", "decision"})


class BlockExample(BaseModel):
    """One worked example of a block: these inputs give these outputs.

    Example:
        >>> BlockExample(inputs={"text": "hi"}, outputs={"lang": "en"}).outputs
        {'lang': 'en'}
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, Any] = Field(default_factory=dict)


def _keys_schema(keys: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {} for k in keys},
        "required": list(keys),
    }


class BlockDefinition(BaseModel):
    """A reusable block: its contract, how it runs, and how it is found.

    ``kind`` decides which field must be set: ``prompt_template`` for
    ``llm``; ``source_code`` for ``python``; ``tool`` for ``tool``;
    ``branches`` (and a prompt or source that picks one) for ``decision``.
    ``input_keys`` / ``output_keys`` are shorthand for object schemas that
    require those keys. ``template_format`` says how ``prompt_template`` is
    written: ``"jinja2"`` (``{{ name }}``, the default) or ``"f-string"``
    (seed 000's ``{name}``, plain input names only).

    Seed 000's spellings are accepted and stored under flowcore's names:
    ``block_id``, ``block_type`` (``action`` and ``extraction`` are ``llm``
    blocks, ``query_memory`` is ``memory_query``), ``llm_provider``,
    ``llm_model``, and ``tools_required``, the tools the block's model may
    call (stored as ``metadata["tools"]``). ``network`` lets Python source use ``httpx``;
    ``env`` names the environment variables its ``os.environ`` holds (their
    values come from the environment the application hands the executor;
    nothing else of the host's environment reaches the block).

    Example:
        >>> block = BlockDefinition(
        ...     id="summarize", name="Summarize", description="Summarize a text",
        ...     kind="llm", input_keys=["text"], output_keys=["summary"],
        ...     prompt_template="Summarize: {{ text }}")
        >>> block.input_schema["required"]
        ['text']
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    description: str
    version: int = Field(default=1, ge=1)
    kind: BlockKind
    input_schema: dict[str, Any] = Field(default_factory=lambda: _keys_schema([]))
    output_schema: dict[str, Any] = Field(default_factory=lambda: _keys_schema([]))
    # Before prompt_template: its check reads the format.
    template_format: TemplateFormat = "jinja2"
    prompt_template: str | None = None
    source_code: str | None = None
    tool: str | None = None
    branches: dict[str, str] | None = None
    provider: str | None = None
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    #: The most tokens one model call of the block may write (None: the provider's default).
    max_tokens: int | None = Field(default=None, ge=1)
    #: A cap on what one execution of the block may spend (see flowcore.budgets).
    budget: Budget | None = None
    max_retries: int = Field(default=2, ge=0, le=20)
    timeout_seconds: float = Field(default=60.0, gt=0)
    network: bool = False
    env: tuple[str, ...] = ()
    category: str = ""
    tags: tuple[str, ...] = ()
    use_when: str = ""
    examples: tuple[BlockExample, ...] = ()
    created_by: str = "system"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def secret_inputs(self) -> frozenset[str]:
        """Input fields whose schema marks them ``"secret": true`` or ``"writeOnly": true``.

        Example:
            >>> BlockDefinition(id="call", name="Call", description="Call an API", kind="tool",
            ...     tool="http_get", input_schema={"type": "object", "properties": {
            ...         "url": {"type": "string"},
            ...         "token": {"type": "string", "secret": True}}}).secret_inputs
            frozenset({'token'})
        """
        return _secret_fields(self.input_schema)

    @property
    def secret_outputs(self) -> frozenset[str]:
        """Output fields whose schema marks them secret (see :attr:`secret_inputs`).

        Example:
            >>> BlockDefinition(id="login", name="Login", description="Get a session token",
            ...     kind="tool", tool="login", output_schema={"type": "object", "properties": {
            ...         "session": {"type": "string", "writeOnly": True}}}).secret_outputs
            frozenset({'session'})
        """
        return _secret_fields(self.output_schema)

    @classmethod
    def from_data(cls, data: Any) -> BlockDefinition:
        """Build a definition from a dict (e.g. parsed JSON), raising a flowcore error.

        Every problem is listed as ``field: what is wrong and how to fix it``.

        Example:
            >>> BlockDefinition.from_data({"id": "x", "name": "X", "description": "d",
            ...                            "kind": "tool", "tool": "http_get"}).tool
            'http_get'
        """
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                where = ".".join(str(p) for p in err["loc"]) or "block"
                message = err["msg"].removeprefix("Value error, ")
                problems.append(f"{where}: {message}")
            block = data.get("id") or data.get("block_id") if isinstance(data, dict) else None
            raise BlockDefinitionError(problems, block=block) from None

    # ------------------------------------------------------------ shorthand
    @model_validator(mode="before")
    @classmethod
    def _accept_shorthand(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in _ALIASES.items():
            if old in data:
                if new in data and data[new] != data[old]:
                    raise ValueError(
                        f"both {old!r} and {new!r} are given with different values; "
                        f"use {new!r} only"
                    )
                data[new] = data.pop(old)
        for keys_field, schema_field in (
            ("input_keys", "input_schema"),
            ("output_keys", "output_schema"),
        ):
            if keys_field in data:
                keys = data.pop(keys_field)
                if schema_field in data:
                    raise ValueError(
                        f"give either {keys_field} or {schema_field}, not both; "
                        f"{keys_field} is shorthand for an object schema requiring those keys"
                    )
                if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                    raise ValueError(f"{keys_field} must be a list of key names")
                data[schema_field] = _keys_schema(keys)
        kind = data.get("kind")
        if isinstance(kind, str) and kind in _SEED_KINDS:
            data["kind"] = _SEED_KINDS[kind]
        if "tools_required" in data:
            _move_tools_required(data)
        return data

    # ----------------------------------------------------------- fields
    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(
                f"block id {value!r} must start with a letter and use only letters, digits, "
                "'_', '-' or '.', at most 128 characters, e.g. 'summarize_text'"
            )
        return value

    @field_validator("env")
    @classmethod
    def _check_env(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ValueError(
                    f"{name!r} is not an environment variable name: use letters, digits "
                    "and '_', not starting with a digit, e.g. 'WEATHER_API_KEY'"
                )
        if len(set(value)) != len(value):
            raise ValueError("lists an environment variable twice; name each once")
        return value

    @field_validator("name", "description")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty: say what the block is and does")
        return value

    @field_validator("input_schema", "output_schema")
    @classmethod
    def _check_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_json_schema(value, "schema")
        if value.get("type", "object") != "object":
            raise ValueError(
                "a block's input and output schemas describe a dict of named values: "
                'use {"type": "object", "properties": {...}}'
            )
        return value

    @field_validator("prompt_template")
    @classmethod
    def _check_template(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or "template_format" not in info.data:
            return value  # an unknown template_format is reported on its own
        template_format = info.data["template_format"]
        try:
            # Syntax, size, nesting, include/import/extends, the other format's placeholders.
            check_template(value, template_format=template_format)
        except TemplateRenderError as exc:
            where = "" if exc.line is None else f"line {exc.line}: "
            fix = ""
            if exc.cause.startswith("syntax error"):
                fix = "; write placeholders as " + (
                    "{name}" if template_format == "f-string" else "{{ name }}"
                )
            raise ValueError(f"is not a valid prompt template ({where}{exc.cause}){fix}") from None
        return value

    @field_validator("source_code")
    @classmethod
    def _check_source(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            tree = ast.parse(value)
        except SyntaxError as exc:
            raise ValueError(f"is not valid Python (line {exc.lineno}: {exc.msg})") from None
        if not any(
            isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name == "execute"
            for node in tree.body
        ):
            raise ValueError(
                "must define 'async def execute(inputs, context) -> dict' at top level"
            )
        return value

    # -------------------------------------------------------------- kinds
    @model_validator(mode="after")
    def _check_kind(self) -> BlockDefinition:
        needs = {
            "llm": ("prompt_template",),
            "python": ("source_code",),
            "tool": ("tool",),
        }
        for field in needs.get(self.kind, ()):
            if getattr(self, field) is None:
                raise ValueError(f"a {self.kind!r} block needs {field}; set it or change kind")
        if self.kind == "decision":
            if not self.branches:
                raise ValueError(
                    "a 'decision' block needs branches, e.g. {'yes': 'next_step', 'no': 'stop'}"
                )
            if self.prompt_template is None and self.source_code is None:
                raise ValueError(
                    "a 'decision' block needs a prompt_template or source_code that picks "
                    "one of its branches"
                )
        elif self.branches:
            raise ValueError(
                f"branches only apply to 'decision' blocks, not {self.kind!r}; remove them"
            )
        if self.metadata.get("tools") and (
            self.kind not in _MODEL_KINDS or self.prompt_template is None
        ):
            raise ValueError(
                f"tools_required (metadata.tools) names tools the block's model may call, but "
                f"this {self.kind!r} block calls no model; remove them"
                + (", or name the one tool in 'tool'" if self.kind == "tool" else "")
            )
        if self.env and self.source_code is None:
            raise ValueError(
                f"env only applies to blocks that run Python source_code, not to this "
                f"{self.kind!r} block; remove it"
            )
        return self


def _move_tools_required(data: dict[str, Any]) -> None:
    """Seed 000's ``tools_required`` becomes ``metadata["tools"]``, what the executor offers."""
    tools = data.pop("tools_required")
    if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
        raise ValueError('tools_required must be a list of tool names, e.g. ["browser"]')
    if not tools:
        return
    metadata = data.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        return  # the metadata field reports its own type error
    if "tools" in metadata and metadata["tools"] != tools:
        raise ValueError(
            "both tools_required and metadata.tools are given with different tools; "
            "use metadata.tools only"
        )
    data["metadata"] = {**metadata, "tools": list(tools)}


def _secret_fields(schema: dict[str, Any]) -> frozenset[str]:
    props = schema.get("properties") or {}
    return frozenset(
        name
        for name, sub in props.items()
        if isinstance(sub, dict) and (sub.get("secret") is True or sub.get("writeOnly") is True)
    )


def _check_json_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, dict):
        raise ValueError(f"{where} must be a JSON Schema object (a dict), got {schema!r}")
    for flag in ("secret", "writeOnly"):
        if flag in schema and not isinstance(schema[flag], bool):
            raise ValueError(
                f"{where}.{flag} must be true or false, got {schema[flag]!r}; "
                f'write "{flag}": true to mark the field secret'
            )
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    for k in kinds:
        if k not in _JSON_TYPES:
            raise ValueError(
                f"{where}: unknown JSON Schema type {k!r}; use one of {sorted(_JSON_TYPES)}"
            )
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise ValueError(f"{where}.properties must be a dict of property schemas")
    for name, sub in props.items():
        _check_json_schema(sub, f"{where}.properties.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ValueError(f"{where}.required must be a list of property names")
    if props and (missing := [r for r in required if r not in props]):
        raise ValueError(f"{where}.required names {missing}, which are not in properties")
    if "items" in schema:
        _check_json_schema(schema["items"], f"{where}.items")
