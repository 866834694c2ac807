"""``batch``/``abatch``: one graph run per input, results in input order.

LangGraph's compiled graphs are LangChain runnables, which take a list of
inputs through ``batch``/``abatch``. Here each input is an ordinary run (its
own thread id, checkpoints and store writes, as ``invoke`` would make them),
made one after the other: the compat layer starts no tasks of its own, so
concurrency stays the runtime's business inside each run.

Example:
    >>> # app.batch([{"n": 1}, {"n": 2}])  ->  [app.invoke({"n": 1}), app.invoke({"n": 2})]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["BatchCalls", "configs_for"]

Config = Mapping[str, Any]


def configs_for(config: Config | Sequence[Config] | None, count: int) -> list[Config | None]:
    """One config per input: a list is taken as given (it must match), one config is repeated.

    Example:
        >>> configs_for({"recursion_limit": 5}, 2)
        [{'recursion_limit': 5}, {'recursion_limit': 5}]
    """
    if config is None or isinstance(config, Mapping):
        return [config] * count
    configs: list[Config | None] = list(config)
    if len(configs) != count:
        raise ValueError(f"batch() got {len(configs)} configs for {count} inputs")
    return configs


class _Runs(Protocol):
    def invoke(self, input: Any, config: Config | None = None, **kwargs: Any) -> Any: ...

    async def ainvoke(self, input: Any, config: Config | None = None, **kwargs: Any) -> Any: ...


class BatchCalls:
    """``batch`` and ``abatch`` for a class that has ``invoke`` and ``ainvoke``."""

    def batch(
        self: _Runs,
        inputs: Sequence[Any],
        config: Config | Sequence[Config] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """:meth:`invoke` on each input, in order; with ``return_exceptions`` a failure is kept.

        ``config`` is one config for all inputs or a list of one per input.

        Example:
            >>> # app.batch([1, 2]) -> [app.invoke(1), app.invoke(2)]
        """
        results: list[Any] = []
        for value, cfg in zip(inputs, configs_for(config, len(inputs)), strict=True):
            try:
                results.append(self.invoke(value, cfg, **kwargs))
            except Exception as exc:
                if not return_exceptions:
                    raise
                results.append(exc)
        return results

    async def abatch(
        self: _Runs,
        inputs: Sequence[Any],
        config: Config | Sequence[Config] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """:meth:`ainvoke` on each input, in order; with ``return_exceptions`` a failure is kept.

        Example:
            >>> # await app.abatch([1, 2])
        """
        results: list[Any] = []
        for value, cfg in zip(inputs, configs_for(config, len(inputs)), strict=True):
            try:
                results.append(await self.ainvoke(value, cfg, **kwargs))
            except Exception as exc:
                if not return_exceptions:
                    raise
                results.append(exc)
        return results
