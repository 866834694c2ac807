"""Prices per model, in dollars per million tokens, in a table the application extends.

The default table holds list prices of a few well-known models as published
by their providers when this table was written; prices change, so an
application that enforces cost budgets should give its own
(``PriceTable.default().with_prices({...})``). A model id is matched whole,
else by its longest listed prefix, so ``gpt-4o-2024-08-06`` is priced as
``gpt-4o`` and ``gpt-4o-mini-2024-07-18`` as ``gpt-4o-mini``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["DEFAULT_PRICES", "Price", "PriceTable"]


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million input tokens and per million output tokens.

    Example:
        >>> Price(2.5, 10.0).cost(1_000, 500)
        0.0075
    """

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        if self.input_per_million < 0 or self.output_per_million < 0:
            raise ValueError(f"a price cannot be negative, got {self}")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """What ``input_tokens`` in and ``output_tokens`` out cost, in dollars."""
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1_000_000


DEFAULT_PRICES: Mapping[str, Price] = {
    # OpenAI list prices (USD per 1M tokens, standard tier).
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    # Anthropic list prices (USD per 1M tokens).
    "claude-3-5-sonnet": Price(3.00, 15.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-3-haiku": Price(0.25, 1.25),
    "claude-3-opus": Price(15.00, 75.00),
}
"""The prices :meth:`PriceTable.default` starts from."""


class PriceTable:
    """Prices by model id; immutable, extended by :meth:`with_prices`.

    Example:
        >>> table = PriceTable.default().with_prices({"my-model": Price(1.0, 2.0)})
        >>> table.price("gpt-4o-2024-08-06"), table.cost("my-model", 1_000_000, 0)
        (Price(input_per_million=2.5, output_per_million=10.0), 1.0)
    """

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self._prices: dict[str, Price] = dict(prices or {})
        for model, price in self._prices.items():
            if not isinstance(price, Price):
                raise TypeError(
                    f"price of {model!r} must be a flowcore.budgets.Price, "
                    f"got {type(price).__name__}"
                )

    @classmethod
    def default(cls) -> PriceTable:
        """A table of :data:`DEFAULT_PRICES`."""
        return cls(DEFAULT_PRICES)

    def with_prices(self, prices: Mapping[str, Price]) -> PriceTable:
        """A new table with ``prices`` added (replacing the same model ids)."""
        return PriceTable({**self._prices, **prices})

    def price(self, model: str) -> Price | None:
        """The price of ``model``: exact id, else the longest listed prefix; None if unlisted."""
        found = self._prices.get(model)
        if found is not None:
            return found
        best = max((m for m in self._prices if model.startswith(m)), key=len, default=None)
        return None if best is None else self._prices[best]

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """What the tokens cost on ``model``, or None when the model has no price."""
        price = self.price(model)
        return None if price is None else price.cost(input_tokens, output_tokens)

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.price(model) is not None
