"""Every error flowcore raises, rooted at :class:`FlowcoreError`.

Each leaf also derives from the builtin exception a caller would naturally
catch, so ``except ValueError`` keeps working around flowcore calls::

    FlowcoreError
    ├── GraphDefinitionError (ValueError)      compile() found problems; .problems lists all
    ├── InvalidInputError (ValueError)         run() input does not fit the state schema
    ├── InvalidUpdateError (ValueError)        a node's update cannot be applied
    ├── ReferenceSyntaxError (ValueError)      a <<ref>> is malformed
    ├── ReferenceResolutionError (LookupError) a <<ref>> could not be resolved at run time
    ├── RoutingError (ValueError)              a router returned a target it did not declare
    ├── GraphRecursionError (RecursionError)   the run exceeded its recursion_limit
    └── NodeError (RuntimeError)               a node failed after all its attempts
        └── NodeTimeoutError (TimeoutError)    ... because an attempt ran out of time

Every error has a stable ``code`` (anchors in docs/errors.md) and a message
that names the graph element at fault and says how to fix it.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence

__all__ = [
    "BlockConfigurationError",
    "BlockDefinitionError",
    "BlockError",
    "BlockInputError",
    "BlockOutputError",
    "BlockTimeoutError",
    "BudgetExceededError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStoreError",
    "FlowcoreError",
    "GraphDefinitionError",
    "GraphRecursionError",
    "InvalidInputError",
    "InvalidUpdateError",
    "NodeError",
    "NodeTimeoutError",
    "ReferenceResolutionError",
    "ReferenceSyntaxError",
    "ResumeError",
    "RoutingError",
    "SerializationError",
    "ThreadBusyError",
    "ToolCallError",
]


class FlowcoreError(Exception):
    """Root of every error raised by flowcore.

    Example:
        >>> try:
        ...     raise InvalidUpdateError("bad", node="a", key="k")
        ... except FlowcoreError as exc:
        ...     exc.code
        'invalid-update'
    """

    code: str = "flowcore-error"


class GraphDefinitionError(FlowcoreError, ValueError):
    """The graph definition is invalid; ``problems`` lists every problem found.

    Example:
        >>> err = GraphDefinitionError(["edge a -> b: unknown node 'b'"])
        >>> err.problems
        ("edge a -> b: unknown node 'b'",)
    """

    code = "graph-definition"

    def __init__(self, problems: Sequence[str], *, graph: str | None = None) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        self.graph = graph
        where = f"graph {graph!r}" if graph else "graph"
        count = len(self.problems)
        header = f"{where} has {count} problem{'s' if count != 1 else ''}:"
        super().__init__("\n".join([header, *(f"  - {p}" for p in self.problems)]))


class InvalidInputError(FlowcoreError, ValueError):
    """The input given to a run does not fit the graph's state schema.

    Example:
        >>> InvalidInputError("input key 'x' is not in the state schema").code
        'invalid-input'
    """

    code = "invalid-input"


class InvalidUpdateError(FlowcoreError, ValueError):
    """A node returned an update that cannot be applied to the state.

    Raised for updates that are not mappings, keys missing from the schema,
    reducer failures, and two writes to a replace-key in one superstep.

    Example:
        >>> InvalidUpdateError("x", node="a", key="k").key
        'k'
    """

    code = "invalid-update"

    def __init__(
        self,
        message: str,
        *,
        node: str | None = None,
        key: str | None = None,
        nodes: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.node = node
        self.key = key
        self.nodes: tuple[str, ...] = tuple(nodes) if nodes else ((node,) if node else ())


class ReferenceSyntaxError(FlowcoreError, ValueError):
    """A ``<<...>>`` reference is malformed (empty, or a bad path segment).

    Example:
        >>> ReferenceSyntaxError("<<n1.>> has an empty path segment").code
        'reference-syntax'
    """

    code = "reference-syntax"


class ReferenceResolutionError(FlowcoreError, LookupError):
    """A ``<<namespace.path>>`` reference could not be resolved at run time.

    Example:
        >>> err = ReferenceResolutionError("<<a.b>>", segment="b", node="n", reason="no key")
        >>> err.segment
        'b'
    """

    code = "reference-resolution"

    def __init__(
        self,
        reference: str,
        *,
        segment: str,
        reason: str,
        node: str | None = None,
    ) -> None:
        self.reference = reference
        self.segment = segment
        self.node = node
        self.reason = reason
        where = f"node {node!r}: " if node else ""
        super().__init__(
            f"{where}cannot resolve {reference}: segment {segment!r} {reason}. "
            "Check the reference path against the upstream output, or escape it as \\<< "
            "if it is meant literally."
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_reference_error, (self.reference, self.segment, self.reason, self.node))


def _rebuild_reference_error(
    reference: str, segment: str, reason: str, node: str | None
) -> ReferenceResolutionError:
    return ReferenceResolutionError(reference, segment=segment, reason=reason, node=node)


class RoutingError(FlowcoreError, ValueError):
    """A router returned something that is not one of its declared targets.

    Example:
        >>> RoutingError("bad", node="a").node
        'a'
    """

    code = "routing"

    def __init__(self, message: str, *, node: str) -> None:
        super().__init__(message)
        self.node = node


class GraphRecursionError(FlowcoreError, RecursionError):
    """The run needed more supersteps than its ``recursion_limit`` allows.

    Example:
        >>> GraphRecursionError("too deep", limit=3).limit
        3
    """

    code = "recursion-limit"

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class NodeError(FlowcoreError, RuntimeError):
    """A node raised, after exhausting its retry policy.

    ``node`` names the node, ``attempts`` says how many times it ran, and
    ``cause`` (also ``__cause__``) is the last exception it raised.

    Example:
        >>> err = NodeError(node="fetch", attempts=3, cause=OSError("down"))
        >>> (err.node, err.attempts)
        ('fetch', 3)
    """

    code = "node-failed"

    def __init__(self, *, node: str, attempts: int, cause: BaseException) -> None:
        self.node = node
        self.attempts = attempts
        self.cause = cause
        tries = _tries(attempts, cause)
        reason = str(cause).rstrip(".")
        super().__init__(
            f"node {node!r} failed {tries}: {type(cause).__name__}: {reason}. "
            "Fix the node, or give it a RetryPolicy that retries this exception."
        )
        self.__cause__ = cause


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _tries(attempts: int, cause: BaseException) -> str:
    """``after N attempts``, with the block's own attempts and model calls when it reports them.

    A block node runs its block's retries inside one node attempt: a node
    whose block tried three times and asked the model six times did not
    fail "after 1 attempt".
    """
    inner = getattr(cause, "block_attempts", 0)
    calls = getattr(cause, "model_calls", 0)
    if not isinstance(inner, int) or not isinstance(calls, int) or (inner <= 1 and calls <= 1):
        return f"after {_plural(attempts, 'attempt')}"
    work = f"{_plural(inner, 'block attempt')}, {_plural(calls, 'model call')}"
    if attempts <= 1:
        return f"after {work}"
    return f"after {_plural(attempts, 'attempt')} (the last: {work})"


class NodeTimeoutError(NodeError, TimeoutError):
    """A node's attempt took longer than its ``timeout``.

    Example:
        >>> err = NodeTimeoutError(node="slow", attempts=1, timeout=0.5)
        >>> err.timeout
        0.5
    """

    code = "node-timeout"

    def __init__(self, *, node: str, attempts: int, timeout: float) -> None:
        self.timeout = timeout
        cause = TimeoutError(f"attempt exceeded {timeout}s")
        super().__init__(node=node, attempts=attempts, cause=cause)
        self.args = (
            f"node {node!r} timed out after {attempts} attempt"
            f"{'s' if attempts != 1 else ''} of {timeout}s each. "
            "Raise its timeout= or make the node faster.",
        )


class CheckpointError(FlowcoreError):
    """Saving or loading a checkpoint failed; the stored data is left as it was.

    Example:
        >>> CheckpointError("checkpoint 'c1' already exists in thread 't'").code
        'checkpoint'
    """

    code = "checkpoint"


class SerializationError(CheckpointError, TypeError):
    """A value cannot be stored: it is not one of the types the serializer knows.

    ``path`` says where the value sits (e.g. ``values.notes[2]``).

    Example:
        >>> err = SerializationError("cannot store a socket", path="values.conn")
        >>> err.path
        'values.conn'
    """

    code = "serialization"

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class CheckpointStoreError(CheckpointError):
    """The storage behind a checkpointer is unusable: corrupt, foreign or too new.

    Example:
        >>> CheckpointStoreError("x.db is not a flowcore checkpoint database").code
        'checkpoint-store'
    """

    code = "checkpoint-store"


class CheckpointNotFoundError(CheckpointError, LookupError):
    """A thread or checkpoint id names nothing stored.

    Example:
        >>> CheckpointNotFoundError("no thread 't'", thread_id="t").thread_id
        't'
    """

    code = "checkpoint-not-found"

    def __init__(self, message: str, *, thread_id: str, checkpoint_id: str | None = None) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id


class ResumeError(FlowcoreError, ValueError):
    """A thread cannot be resumed the way it was asked (nothing to resume, wrong value).

    Example:
        >>> ResumeError("thread 't' has finished", thread_id="t").thread_id
        't'
    """

    code = "resume"

    def __init__(self, message: str, *, thread_id: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class ThreadBusyError(FlowcoreError, RuntimeError):
    """A thread is already running elsewhere: another run holds its lease.

    A run on a thread (native or LangGraph compat, with a checkpointer that
    leases threads) first takes the thread's lease in the checkpoint store;
    a second run of the same thread, in this process or another, gets this
    error until the first one ends or its lease expires. ``holder`` names
    the run holding it (host, pid, random part) and ``expires_at`` (Unix
    time) says when it lapses if that run stops renewing it.

    Example:
        >>> err = ThreadBusyError(thread_id="t1", holder="web-1:4242:9f2c", expires_at=0.0)
        >>> err.code, err.holder
        ('thread-busy', 'web-1:4242:9f2c')
    """

    code = "thread-busy"

    def __init__(
        self,
        *,
        thread_id: str,
        holder: str,
        expires_at: float,
        message: str | None = None,
    ) -> None:
        if message is None:
            until = datetime.datetime.fromtimestamp(expires_at, datetime.UTC)
            left = max(0.0, expires_at - time.time())
            message = (
                f"thread {thread_id!r} is already running elsewhere: run {holder!r} holds its "
                f"lease until {until.isoformat(timespec='seconds')} ({left:.1f} s from now; "
                "renewed while that run is alive); wait for that run to end and try again, "
                "or, if its process died, try again once the lease has expired"
            )
        super().__init__(message)
        self.thread_id = thread_id
        self.holder = holder
        self.expires_at = expires_at


class BlockDefinitionError(FlowcoreError, ValueError):
    """A block definition is invalid; ``problems`` lists each field and what to fix.

    Example:
        >>> BlockDefinitionError(["kind: a 'llm' block needs prompt_template"]).problems
        ("kind: a 'llm' block needs prompt_template",)
    """

    code = "block-definition"

    def __init__(self, problems: list[str], *, block: str | None = None) -> None:
        self.problems = tuple(problems)
        self.block = block
        name = f"block {block!r}" if block else "block definition"
        super().__init__(f"{name} is invalid:\n" + "\n".join(f"  - {p}" for p in problems))


class BlockError(FlowcoreError):
    """Running a block failed; ``block`` is its id. Raised inside the block's node.

    ``retryable`` says whether the block executor tries again (within the
    block's ``max_retries``): bad inputs and configuration never are, a
    timeout or an answer that did not fit the output schema are. When the
    executor gives up it records on the error how hard it tried:
    ``block_attempts`` (the block's attempts) and ``model_calls`` (provider
    requests, retried and repaired ones included); a :class:`NodeError`
    caused by it says both.

    Example:
        >>> BlockTimeoutError("summarize", 30.0).retryable
        True
    """

    code = "block-failed"
    retryable = False
    block_attempts = 0
    model_calls = 0

    def __init__(self, message: str, *, block: str) -> None:
        super().__init__(message)
        self.block = block


_INPUT_HINT = (
    "Wire the missing or mistyped inputs into the node, or change the block's input_schema."
)


def _listed(problems: Sequence[str]) -> str:
    return "\n".join(f"  - {p}" for p in problems)


class BlockInputError(BlockError, ValueError):
    """The block's inputs do not fit its ``input_schema`` (or its template needs more).

    ``hint``, the message's last sentence, says how to fix it; by default it
    points at the node's wiring and the block's ``input_schema``, and the
    block executor gives template failures a hint about the template.

    Example:
        >>> BlockInputError("summarize", ["inputs: missing required key 'text'"]).problems
        ("inputs: missing required key 'text'",)
        >>> BlockInputError("summarize", ["prompt_template line 2: boom"],
        ...                 hint="Fix the block's prompt_template (line 2).").hint
        "Fix the block's prompt_template (line 2)."
    """

    code = "block-input"

    def __init__(self, block: str, problems: Sequence[str], *, hint: str = _INPUT_HINT) -> None:
        self.problems = tuple(problems)
        self.hint = hint
        super().__init__(
            f"block {block!r} got inputs it cannot use:\n{_listed(problems)}\n{hint}",
            block=block,
        )


class BlockOutputError(BlockError, ValueError):
    """The block's result does not fit its ``output_schema`` (or was not JSON at all).

    Retried: a model asked again, with the error, often gets it right.

    Example:
        >>> BlockOutputError("summarize", ["output: missing required key 'summary'"]).code
        'block-output'
    """

    code = "block-output"
    retryable = True

    def __init__(self, block: str, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            f"block {block!r} produced output that does not fit its output_schema:\n"
            f"{_listed(problems)}\nMake the prompt or code produce these keys, or fix the "
            "output_schema.",
            block=block,
        )


class BlockTimeoutError(BlockError, TimeoutError):
    """One attempt of a block ran longer than its ``timeout_seconds``.

    Example:
        >>> BlockTimeoutError("summarize", 30.0).seconds
        30.0
    """

    code = "block-timeout"
    retryable = True

    def __init__(self, block: str, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(
            f"block {block!r} timed out after {seconds}s; raise its timeout_seconds or make "
            "it faster",
            block=block,
        )


class BlockConfigurationError(BlockError, LookupError):
    """The executor lacks what the block needs: a provider, a tool, a memory store.

    Example:
        >>> BlockConfigurationError("block 'x' needs provider 'openai'", block="x").code
        'block-configuration'
    """

    code = "block-configuration"


class ToolCallError(BlockError, RuntimeError):
    """A tool block's call failed; ``error_code`` is the ToolRunner's code.

    ``safe_message`` never contains argument or result values. Execution
    failures are retried, validation, unavailable and redaction failures are not.

    Example:
        >>> ToolCallError("fetch", "http_get", "execution", "tool timed out").retryable
        True
    """

    code = "tool-call"

    def __init__(self, block: str, tool: str, error_code: str, safe_message: str) -> None:
        self.tool = tool
        self.error_code = error_code
        self.safe_message = safe_message
        # Only an execution failure may go away when tried again.
        self.retryable = error_code == "execution"
        super().__init__(
            f"block {block!r}: tool {tool!r} failed ({error_code}): {safe_message}",
            block=block,
        )


class BudgetExceededError(BlockError, RuntimeError):
    """A model call was not made: it could pass a token or cost budget.

    ``scope`` is ``run``, ``thread``, ``user`` or ``block`` and ``key`` whose
    budget it is (the run, thread or user id, or the block id); ``limit``,
    ``spent`` and ``needed`` are in ``unit`` (``tokens`` or ``usd``):
    ``needed`` is the most the refused call could have used (its prompt's
    estimated tokens plus its ``max_tokens``). Never retried.

    Example:
        >>> err = BudgetExceededError("thread", "t1", "tokens", limit=200, spent=150,
        ...                           needed=80, block="answer", node="answer")
        >>> err.code, err.scope
        ('budget-exceeded', 'thread')
    """

    code = "budget-exceeded"

    def __init__(
        self,
        scope: str,
        key: str,
        unit: str,
        *,
        limit: float,
        spent: float,
        needed: float,
        block: str,
        node: str,
    ) -> None:
        self.scope = scope
        self.key = key
        self.unit = unit
        self.limit = limit
        self.spent = spent
        self.needed = needed
        self.node = node

        def amount(value: float) -> str:
            return f"${value:.4f}" if unit == "usd" else f"{int(value)} tokens"

        super().__init__(
            f"{scope} {key!r} has spent {amount(spent)} of its {amount(limit)} budget; the next "
            f"model call of block {block!r} (node {node!r}) could use up to {amount(needed)}, "
            "so it was not made. Raise the budget (config={'budgets': {...}} on the next run "
            "or resume) or lower the block's max_tokens",
            block=block,
        )
