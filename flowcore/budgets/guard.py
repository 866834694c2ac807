"""``BudgetGuard``: refuses a model call that could pass a budget, and counts what calls spend.

The block executor holds the guard (``BlockExecutor(budgets=BudgetGuard())``)
the way it holds its providers and tools. For each block execution it asks
the guard to :meth:`~BudgetGuard.watch` the node's context: the guard then
reads every ``usage`` event the block emits (so it counts exactly what the
events count: retries, repairs and tool rounds included), and before each
model request :meth:`~BudgetGuard.check` stores what was spent and refuses
the request with :class:`~flowcore.errors.BudgetExceededError` when the
tokens spent plus the most the request could use (its prompt's estimated
tokens plus its ``max_tokens``) would pass a budget, or their price would.

The budgets themselves are data: ``config={"budgets": {...}}`` on the run
(scopes ``run``, ``thread``, ``user``) and ``BlockDefinition.budget`` on a
block. A thread's budgets are saved in the store with its spending, so a
paused thread resumed without budgets keeps them and one resumed with a
raised budget goes on from what it had spent.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

from flowcore.budgets.limits import Budget, Budgets, Scope, Spend
from flowcore.budgets.prices import PriceTable
from flowcore.budgets.store import BudgetStore, InMemoryBudgetStore
from flowcore.errors import BlockConfigurationError, BudgetExceededError
from flowcore.events import UsageEvent
from flowcore.llm.types import LLMRequest
from flowcore.scheduler.context import NodeContext

__all__ = ["BudgetGuard", "BudgetWatch", "estimate_prompt_tokens"]


def estimate_prompt_tokens(request: LLMRequest, *, chars_per_token: float = 4.0) -> int:
    """A cheap upper-leaning estimate of a request's prompt tokens: its characters / 4.

    Counts the system prompt, every message with its tool calls, and the tool
    and response schemas offered, since providers bill those as input too.

    Example:
        >>> from flowcore.llm.types import Message
        >>> estimate_prompt_tokens(LLMRequest((Message("user", "x" * 40),)))
        10
    """
    chars = len(request.system or "")
    for message in request.messages:
        chars += len(message.content)
        for call in message.tool_calls:
            chars += len(call.name) + len(json.dumps(call.arguments, default=str))
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))
    if request.response_schema is not None:
        chars += len(json.dumps(request.response_schema, default=str))
    return math.ceil(chars / chars_per_token)


@dataclass(slots=True)
class BudgetWatch:
    """What one block execution has spent, and what it has not yet stored.

    Example:
        >>> # ctx, watch = guard.watch(ctx, block.id, block.budget)
    """

    ctx: NodeContext
    block_id: str
    block_budget: Budget | None
    block_spent: Spend = field(default_factory=Spend)
    pending: Spend = field(default_factory=Spend)

    def record(self, spend: Spend) -> None:
        """Count ``spend`` for the block now and for the stored scopes at the next settle."""
        self.block_spent = self.block_spent + spend
        self.pending = self.pending + spend


class BudgetGuard:
    """Enforces token and cost budgets on the model calls of block executions.

    Args:
        store: Where spending and thread budgets are kept (default: in memory,
            for this guard's lifetime; use a ``SqliteBudgetStore`` to keep
            them across processes).
        prices: Prices per model, for cost budgets (default:
            :meth:`PriceTable.default`). A provider's own reported cost wins.
        default_max_tokens: The output tokens assumed for a request that
            sets no ``max_tokens`` (set the block's ``max_tokens`` to cap it).
        chars_per_token: How prompt text is turned into estimated tokens.

    Example:
        >>> guard = BudgetGuard(default_max_tokens=512)
        >>> # executor = BlockExecutor(providers=..., budgets=guard)
        >>> # await graph.run(x, thread_id="t1",
        >>> #                 config={"budgets": {"thread": {"max_tokens": 5000}}})
    """

    def __init__(
        self,
        store: BudgetStore | None = None,
        *,
        prices: PriceTable | None = None,
        default_max_tokens: int = 1024,
        chars_per_token: float = 4.0,
    ) -> None:
        if default_max_tokens < 1:
            raise ValueError(f"default_max_tokens must be >= 1, got {default_max_tokens}")
        if not chars_per_token > 0:
            raise ValueError(f"chars_per_token must be > 0, got {chars_per_token}")
        self.store: BudgetStore = store if store is not None else InMemoryBudgetStore()
        self.prices = prices if prices is not None else PriceTable.default()
        self.default_max_tokens = default_max_tokens
        self.chars_per_token = chars_per_token

    # ----------------------------------------------------------- counting
    def watch(
        self, ctx: NodeContext, block_id: str, block_budget: Budget | None = None
    ) -> tuple[NodeContext, BudgetWatch]:
        """``ctx`` whose ``usage`` events are counted, and the watch counting them.

        Example:
            >>> # ctx, watch = guard.watch(ctx, block.id, block.budget)
        """
        watch = BudgetWatch(ctx, block_id, block_budget)

        def publish(event_type: Any, fields: dict[str, Any]) -> None:
            if event_type is UsageEvent:
                watch.record(self._spend_of(fields))
            ctx.publish(event_type, **fields)

        return replace(ctx, _publish=publish), watch

    def _spend_of(self, fields: dict[str, Any]) -> Spend:
        tokens_in = int(fields.get("input_tokens") or 0)
        tokens_out = int(fields.get("output_tokens") or 0)
        cost = fields.get("cost_usd")
        if cost is None:
            model = str(fields.get("model") or fields.get("request_model") or "")
            cost = self.prices.cost(model, tokens_in, tokens_out) if model else None
        return Spend(tokens_in, tokens_out, float(cost or 0.0))

    def _keys(self, ctx: NodeContext) -> list[tuple[Scope, str]]:
        keys: list[tuple[Scope, str]] = [("run", ctx.run_id)]
        if ctx.thread_id is not None:
            keys.append(("thread", ctx.thread_id))
        user = ctx.config.get("user_id")
        if user:
            keys.append(("user", str(user)))
        return keys

    async def settle(self, watch: BudgetWatch) -> None:
        """Store what the watch counted and has not stored yet.

        Example:
            >>> # await guard.settle(watch)  # the executor calls it after each block
        """
        pending = watch.pending
        if pending == Spend():
            return
        watch.pending = Spend()
        await self.store.add(self._keys(watch.ctx), pending)

    async def spent(self, scope: Scope, key: str) -> Spend:
        """What ``key`` has spent in ``scope`` (``run``, ``thread`` or ``user``).

        Example:
            >>> # (await guard.spent("thread", "t1")).total_tokens
        """
        return await self.store.spent(scope, key)

    # ----------------------------------------------------------- checking
    async def budgets_for(self, ctx: NodeContext) -> Budgets | None:
        """The run's budgets: its config's, else (on a thread) those the thread last had.

        Example:
            >>> # budgets = await guard.budgets_for(ctx)
        """
        given = Budgets.from_config(ctx.config)
        thread = ctx.thread_id
        if thread is None:
            return given
        if given is None:
            return await self.store.thread_budgets(thread)
        if await self.store.thread_budgets(thread) != given:
            await self.store.set_thread_budgets(thread, given)
        return given

    async def check(self, watch: BudgetWatch, request: LLMRequest, model: str | None) -> None:
        """Raise ``BudgetExceededError`` if ``request`` could pass a budget; else return.

        ``model`` is the model the request goes to (for its price). Stores
        the watch's spending first, so every check sees every finished call.

        Example:
            >>> # await guard.check(watch, request, "gpt-4o")
        """
        await self.settle(watch)
        ctx = watch.ctx
        budgets = await self.budgets_for(ctx)
        limits: list[tuple[Scope, str, Budget]] = []
        if watch.block_budget is not None:
            limits.append(("block", watch.block_id, watch.block_budget))
        if budgets is not None:
            for scope, key in self._keys(ctx):
                budget = getattr(budgets, scope)
                if budget is not None:
                    limits.append((scope, key, budget))
        if not limits:
            return
        prompt = estimate_prompt_tokens(request, chars_per_token=self.chars_per_token)
        most_out = request.max_tokens or self.default_max_tokens
        needed_cost: float | None = None
        if any(b.max_cost_usd is not None for _, _, b in limits):
            needed_cost = self._call_cost(watch.block_id, model or request.model, prompt, most_out)
        for scope, key, budget in limits:
            spent = watch.block_spent if scope == "block" else await self.store.spent(scope, key)
            needed = prompt + most_out
            if budget.max_tokens is not None and spent.total_tokens + needed > budget.max_tokens:
                raise self._exceeded(
                    watch, scope, key, "tokens", budget.max_tokens, spent.total_tokens, needed
                )
            cap = budget.max_cost_usd
            if cap is not None and needed_cost is not None and spent.cost_usd + needed_cost > cap:
                raise self._exceeded(watch, scope, key, "usd", cap, spent.cost_usd, needed_cost)

    def _call_cost(self, block: str, model: str | None, prompt: int, most_out: int) -> float:
        if not model:
            raise BlockConfigurationError(
                f"block {block!r} has a cost budget but names no model, so its price is "
                "unknown; set the block's model (or the provider registry's default model)",
                block=block,
            )
        cost = self.prices.cost(model, prompt, most_out)
        if cost is None:
            raise BlockConfigurationError(
                f"block {block!r} has a cost budget but model {model!r} has no price; add it: "
                f"BudgetGuard(prices=PriceTable.default().with_prices({{{model!r}: "
                "Price(input_per_million=..., output_per_million=...)}))",
                block=block,
            )
        return cost

    @staticmethod
    def _exceeded(
        watch: BudgetWatch,
        scope: Scope,
        key: str,
        unit: str,
        limit: float,
        spent: float,
        needed: float,
    ) -> BudgetExceededError:
        return BudgetExceededError(
            scope,
            key,
            unit,
            limit=limit,
            spent=spent,
            needed=needed,
            block=watch.block_id,
            node=watch.ctx.node,
        )
