"""Token and cost budgets per run, per thread, per user and per block.

Budgets are data (``config={"budgets": {...}}`` on a run, ``budget`` on a
block); a :class:`BudgetGuard` held by the block executor enforces them:
a model call that could pass a budget is not made, and the run ends with
:class:`~flowcore.errors.BudgetExceededError` after its finished work is
saved. Prices per model live in a :class:`PriceTable` you can extend.

Example:
    >>> from flowcore.budgets import BudgetGuard, Price, PriceTable
    >>> guard = BudgetGuard(prices=PriceTable.default().with_prices({"m": Price(1.0, 2.0)}))
    >>> # executor = BlockExecutor(providers=..., budgets=guard)
    >>> # await graph.run(x, thread_id="t1", config={"budgets": {"thread": {"max_tokens": 9000}}})
"""

from flowcore.budgets.guard import BudgetGuard, BudgetWatch, estimate_prompt_tokens
from flowcore.budgets.limits import BUDGETS_KEY, Budget, Budgets, Scope, Spend
from flowcore.budgets.prices import DEFAULT_PRICES, Price, PriceTable
from flowcore.budgets.store import (
    BudgetStore,
    BudgetStoreError,
    InMemoryBudgetStore,
    SqliteBudgetStore,
)
from flowcore.errors import BudgetExceededError

__all__ = [
    "BUDGETS_KEY",
    "DEFAULT_PRICES",
    "Budget",
    "BudgetExceededError",
    "BudgetGuard",
    "BudgetStore",
    "BudgetStoreError",
    "BudgetWatch",
    "Budgets",
    "InMemoryBudgetStore",
    "Price",
    "PriceTable",
    "Scope",
    "Spend",
    "SqliteBudgetStore",
    "estimate_prompt_tokens",
]
