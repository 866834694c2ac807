"""How the executor runs the block kinds that work here: Python code and memory.

:class:`LocalKinds` is a mixin of
:class:`~flowcore.blocks.executor.BlockExecutor` with the ``python`` kind
(and a ``decision`` block without a prompt), run in the code sandbox with
the block's context and the user's memory snapshot, and the
``memory_query`` and ``memory_save`` kinds, which read and write the
executor's long-term :class:`~flowcore.memory.store.Store`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.execution_rules import BlockRun, single_key
from flowcore.errors import BlockConfigurationError, BlockTimeoutError
from flowcore.memory.manager import MemoryManager
from flowcore.memory.store import Namespace, Store
from flowcore.sandbox import PythonSandbox, SandboxTimeoutError
from flowcore.secrets import conceal_secrets, learn

if TYPE_CHECKING:
    from flowcore.blocks.executor import CodeSandbox

__all__ = ["LocalKinds"]


class LocalKinds:
    """The python, decision-by-code, memory_query and memory_save kinds of ``BlockExecutor``.

    A mixin. Example:
        >>> # outputs = await executor._run_python(run, inputs)
    """

    memory: Store | None
    _sandbox: CodeSandbox | None
    environment: Mapping[str, str]

    # --------------------------------------------------------------- python
    def _code_sandbox(self) -> CodeSandbox:
        if self._sandbox is None:
            self._sandbox = PythonSandbox()
        return self._sandbox

    async def _run_python(self, run: BlockRun, inputs: dict[str, Any]) -> dict[str, Any]:
        block, ctx = run.block, run.ctx
        assert block.source_code is not None
        user_id = ctx.config.get("user_id")
        user = ctx.config.get("user")
        context = {
            "run_id": ctx.run_id,
            "node": ctx.node,
            "block_id": block.id,
            "block_version": block.version,
            "attempt": run.attempt,
            "user_id": None if user_id is None else str(user_id),
            "user": dict(user) if isinstance(user, Mapping) else {},
            "memory": await self._memory_snapshot(run),
        }
        env = {name: self.environment[name] for name in block.env if name in self.environment}
        for name, value in env.items():
            learn(ctx.redactor, value, name=f"env.{name}")  # most are keys: never shown
        try:
            result = await self._code_sandbox().run(
                block.source_code,
                inputs,
                context,
                network=block.network,
                # The executor's own timeout stops the wait; this one kills the worker.
                timeout=block.timeout_seconds,
                env=env,
            )
        except SandboxTimeoutError:
            raise BlockTimeoutError(block.id, block.timeout_seconds) from None
        run.metadata["isolation"] = result.isolation
        return dict(result.outputs)

    async def _memory_snapshot(self, run: BlockRun) -> dict[str, Any]:
        # The user's long-term key-values: preferences, then what memory blocks
        # saved (same namespace as theirs); a snapshot, so writes do not flow back.
        user_id = run.ctx.config.get("user_id")
        if self.memory is None or not user_id:
            return {}
        snapshot: dict[str, Any] = {}
        preferences = MemoryManager.preferences_namespace(str(user_id))
        for namespace in (preferences, self._namespace(run)):
            for item in await self.memory.list(namespace):
                snapshot[item.key] = item.value
        return snapshot

    # --------------------------------------------------------------- memory
    def _store(self, block: BlockDefinition) -> Store:
        if self.memory is None:
            raise BlockConfigurationError(
                f"block {block.id!r} uses long-term memory, but the executor has no store; "
                "pass BlockExecutor(memory=InMemoryStore()) or another Store",
                block=block.id,
            )
        return self.memory

    @staticmethod
    def _namespace(run: BlockRun) -> Namespace:
        user = str(run.ctx.config.get("user_id") or "anonymous")
        raw = run.block.metadata.get("namespace") or ["users", "{user_id}", "memory"]
        if not isinstance(raw, list | tuple) or not all(isinstance(p, str) for p in raw):
            raise BlockConfigurationError(
                f"block {run.block.id!r}: metadata.namespace must be a list of strings, "
                "e.g. ['users', '{user_id}', 'memory']",
                block=run.block.id,
            )
        return tuple(p.replace("{user_id}", user) for p in raw)

    async def _run_memory_query(self, run: BlockRun, inputs: dict[str, Any]) -> dict[str, Any]:
        store = self._store(run.block)
        query = inputs.get("memory_query", inputs.get("query"))
        limit = run.block.metadata.get("limit", 5)
        namespace = self._namespace(run)
        hits = await store.search(namespace, str(query) if query else None, limit=int(limit))
        run.metadata["namespace"] = list(namespace)
        found = [{"key": h.key, "value": h.value, "score": h.score} for h in hits]
        return {single_key(run.block.output_schema, "memory_results"): found}

    async def _run_memory_save(self, run: BlockRun, inputs: dict[str, Any]) -> dict[str, Any]:
        store = self._store(run.block)
        namespace = self._namespace(run)
        if "memory_key" in inputs:
            pairs = {str(inputs["memory_key"]): inputs.get("memory_value")}
        else:
            pairs = dict(inputs)  # no explicit key: remember every input under its name
        for key, value in pairs.items():
            # Long-term memory is storage too: no secret is written there.
            await store.put(namespace, key, conceal_secrets(run.ctx.redactor.redact(value)))
        run.metadata["namespace"] = list(namespace)
        return {single_key(run.block.output_schema, "saved"): True}
