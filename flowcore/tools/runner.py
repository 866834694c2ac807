"""Tools and the ``ToolRunner``: the one way a graph calls a tool.

Every call goes through the same fixed steps: validate the arguments,
execute, validate the result, redact it by the tool's allowlist, emit the
``tool_call_result`` event, and return ``ok/value`` or an error code with a
safe message. A call that fails at any step still gets its result event,
with the same ``tool_call_id``, so a UI never waits for an answer that
will not come. Error messages name fields and steps, never values, so a
secret in the arguments cannot leak through them.

Tool call ids: a call keeps the id its model gave it; a call without one
(a tool block's call, or a model that sent ``''``) gets a fresh UUID here,
once, at the runner's boundary, and the same id is on its start event, its
result event, its :class:`ToolResult` and the tool message sent back to the
model. Ids are made per call, never derived from the run, node or attempt,
so a loop's passes and a block's retries never share one (a retry is a new
call with a new id). :meth:`ToolRunner.identify` also gives a fresh id to a
model's call whose id an earlier call of the same exchange already used,
so no two results can be mistaken for each other's.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from flowcore.errors import FlowcoreError
from flowcore.llm.types import ToolCall, ToolSpec

__all__ = [
    "Tool",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolErrorCode",
    "ToolResult",
    "ToolRunner",
    "new_tool_call_id",
]

ToolErrorCode = Literal["validation", "execution", "unavailable", "redaction_failed"]


@dataclass(frozen=True, slots=True)
class Tool:
    """A named async function with typed input and output, and the output fields safe to show.

    ``allowlist`` names the output fields that may leave the runner in
    events; None means nothing was decided, and every call fails with
    ``redaction_failed`` rather than leaking the whole result.

    Example:
        >>> from pydantic import BaseModel
        >>> class Q(BaseModel):
        ...     query: str
        >>> class Hits(BaseModel):
        ...     count: int
        ...     documents: list[str]
        >>> async def search(args: Q) -> Hits:
        ...     return Hits(count=1, documents=["secret doc"])
        >>> tool = Tool("search", "Search the archive", Q, Hits, search, allowlist={"count"})
    """

    name: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    handler: Callable[[Any], Awaitable[Any]]
    allowlist: frozenset[str] | set[str] | None = None
    timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.allowlist is not None:
            unknown = set(self.allowlist) - set(self.output_model.model_fields)
            if unknown:
                raise FlowcoreError(
                    f"tool {self.name!r}: allowlist names {sorted(unknown)}, which are not "
                    f"fields of {self.output_model.__name__}"
                )
        if not self.timeout > 0:
            raise FlowcoreError(f"tool {self.name!r}: timeout must be > 0, got {self.timeout}")

    def spec(self) -> ToolSpec:
        """How the tool is offered to a model: name, description, argument schema."""
        return ToolSpec(self.name, self.description, self.input_model.model_json_schema())


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a call returned: ``ok`` with ``value``, or an error code and a safe message.

    Example:
        >>> ToolResult("c1", "search", ok=False, error_code="unavailable",
        ...            safe_message="no tool named 'serch'").ok
        False
    """

    tool_call_id: str
    tool_name: str
    ok: bool
    value: Mapping[str, Any] | None = None
    error_code: ToolErrorCode | None = None
    safe_message: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call began; ``args`` are the arguments as the model sent them."""

    type = "tool_call_start"
    tool_call_id: str
    tool_name: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A tool call ended; ``result`` holds only allowlisted fields."""

    type = "tool_call_result"
    tool_call_id: str
    tool_name: str
    result: Mapping[str, Any] | None
    is_error: bool = False
    error_code: ToolErrorCode | None = None
    safe_message: str | None = None


ToolEvent = ToolCallStarted | ToolCallFinished
"""What a ToolRunner reports through its ``emit`` callback."""


def new_tool_call_id() -> str:
    """A fresh tool call id: a random UUID, never reused.

    Example:
        >>> a, b = new_tool_call_id(), new_tool_call_id()
        >>> a != b and len(a) == 36
        True
    """
    return str(uuid.uuid4())


def _drop(event: ToolEvent) -> None:
    return None


def _fields_of(error: ValidationError) -> str:
    # Locations only: the offending values may be secrets.
    return ", ".join(
        sorted({".".join(str(p) for p in e["loc"]) or "<root>" for e in error.errors()})
    )


@dataclass
class ToolRunner:
    """Runs tool calls through the fixed pipeline and reports each one.

    Example:
        >>> # runner = ToolRunner([search_tool], emit=events.append)
        >>> # result = await runner.run(ToolCall("c1", "search", {"query": "ducks"}))
    """

    tools: Iterable[Tool]
    emit: Callable[[ToolEvent], None] | None = None
    _by_name: dict[str, Tool] = field(init=False)

    def __post_init__(self) -> None:
        self._by_name = {}
        for tool in self.tools:
            if tool.name in self._by_name:
                raise FlowcoreError(f"two tools are named {tool.name!r}; tool names must be unique")
            self._by_name[tool.name] = tool

    def specs(self) -> list[ToolSpec]:
        """The tools as offered to a model."""
        return [t.spec() for t in self._by_name.values()]

    def identify(
        self, calls: Sequence[ToolCall], taken: set[str] | None = None
    ) -> tuple[ToolCall, ...]:
        """``calls`` with an id each: the model's own, else a fresh UUID.

        A call gets a fresh id when its id is empty or already in ``taken``
        (the ids an exchange has used so far, this batch included); every id
        handed out is added to ``taken``. Use the result both in the assistant
        message and for :meth:`run_many`, so the model sees the ids its results
        answer.

        Example:
            >>> from flowcore.llm.types import ToolCall
            >>> taken: set[str] = set()
            >>> a, b = ToolRunner([]).identify(
            ...     [ToolCall("call_1", "search", {}), ToolCall("", "search", {})], taken)
            >>> a.id, b.id != "" and b.id in taken
            ('call_1', True)
        """
        seen = taken if taken is not None else set()
        out: list[ToolCall] = []
        for call in calls:
            if not call.id or call.id in seen:
                call = replace(call, id=new_tool_call_id())
            seen.add(call.id)
            out.append(call)
        return tuple(out)

    def has(self, name: str) -> bool:
        """Whether a tool named ``name`` is registered.

        Example:
            >>> ToolRunner([]).has("search")
            False
        """
        return name in self._by_name

    async def run(
        self, call: ToolCall, *, emit: Callable[[ToolEvent], None] | None = None
    ) -> ToolResult:
        """Validate, execute, validate, redact, emit, return: one call.

        ``emit`` overrides the runner's own listener for this call (the block
        executor uses it to tag events with the node that made the call). A
        call with an empty id gets a fresh UUID, used for both of its events
        and its result.

        Example:
            >>> # result = await runner.run(ToolCall("c1", "search", {"query": "ducks"}))
            >>> # result = await runner.run(ToolCall("", "search", {"query": "ducks"}))
            >>> # result.tool_call_id  -> a fresh UUID
        """
        if not call.id:
            call = replace(call, id=new_tool_call_id())
        send = emit if emit is not None else self.emit or _drop
        send(ToolCallStarted(call.id, call.name, dict(call.arguments)))

        def fail(code: ToolErrorCode, message: str) -> ToolResult:
            send(ToolCallFinished(call.id, call.name, None, True, code, message))
            return ToolResult(call.id, call.name, False, None, code, message)

        tool = self._by_name.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self._by_name)) or "none"
            return fail("unavailable", f"no tool named {call.name!r} (tools: {known})")
        try:
            args = tool.input_model.model_validate(dict(call.arguments))
        except ValidationError as exc:
            return fail("validation", f"invalid arguments: {_fields_of(exc)}")
        try:
            async with asyncio.timeout(tool.timeout):
                raw = await tool.handler(args)
        except TimeoutError:
            return fail("execution", f"tool timed out after {tool.timeout}s")
        except Exception as exc:
            return fail("execution", f"tool failed ({type(exc).__name__})")
        try:
            output = tool.output_model.model_validate(
                raw.model_dump() if isinstance(raw, BaseModel) else raw
            )
        except ValidationError as exc:
            return fail("validation", f"invalid result: {_fields_of(exc)}")
        value = output.model_dump()  # declared fields only: unknown ones never pass through
        if tool.allowlist is None:
            return fail("redaction_failed", f"tool {tool.name!r} has no allowlist of safe fields")
        shown = {k: v for k, v in value.items() if k in tool.allowlist}
        send(ToolCallFinished(call.id, call.name, shown))
        return ToolResult(call.id, call.name, True, value)

    async def run_many(
        self, calls: Sequence[ToolCall], *, emit: Callable[[ToolEvent], None] | None = None
    ) -> list[ToolResult]:
        """Run calls in parallel (each under its tool's timeout); results in call order.

        Calls are first given ids as :meth:`identify` does (within this batch).

        Example:
            >>> # results = await runner.run_many(response.tool_calls)
        """
        calls = self.identify(calls)
        results: list[ToolResult | None] = [None] * len(calls)

        async def one(i: int, call: ToolCall) -> None:
            results[i] = await self.run(call, emit=emit)

        async with asyncio.TaskGroup() as tg:
            for i, call in enumerate(calls):
                tg.create_task(one(i, call))
        return [r for r in results if r is not None]
