"""LangGraph's deprecation warnings, and the one helper compat code uses to emit them.

Each class names the LangGraph release that deprecated something and the
release expected to remove it; ``str()`` of a warning says both, so a user
reading the message knows how long the old spelling keeps working.

Compat code warns only on a deprecated usage (an old argument name, an old
attribute, an old class), never on the current API: flowcore's own tests turn
every warning into an error.

Example:
    >>> w = LangGraphDeprecatedSinceV10("`x` is deprecated. Use `y` instead.")
    >>> str(w)
    '`x` is deprecated. Use `y` instead. Deprecated in LangGraph V1.0 to be removed in V2.0.'
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = [
    "LangGraphDeprecatedSinceV05",
    "LangGraphDeprecatedSinceV10",
    "LangGraphDeprecatedSinceV11",
    "LangGraphDeprecationWarning",
    "durability_of",
    "warn_deprecated",
    "without_checkpoint_during",
]


class LangGraphDeprecationWarning(DeprecationWarning):
    """A deprecation in LangGraph's API, with the versions that bound it.

    Attributes:
        message: what is deprecated and what to use instead (no trailing dot).
        since: the ``(major, minor)`` release that deprecated it.
        expected_removal: the ``(major, minor)`` release expected to drop it;
            the next major release when not given.
    """

    message: str
    since: tuple[int, int]
    expected_removal: tuple[int, int]

    def __init__(
        self,
        message: str,
        *args: object,
        since: tuple[int, int],
        expected_removal: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(message, *args)
        self.message = message.rstrip(".")
        self.since = since
        self.expected_removal = expected_removal or (since[0] + 1, 0)

    def __str__(self) -> str:
        since = f"V{self.since[0]}.{self.since[1]}"
        removal = f"V{self.expected_removal[0]}.{self.expected_removal[1]}"
        return f"{self.message}. Deprecated in LangGraph {since} to be removed in {removal}."


class LangGraphDeprecatedSinceV05(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 0.5; to be removed in 2.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(0, 5), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV10(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 1.0; to be removed in 2.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 0), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV11(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 1.1; to be removed in 3.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 1), expected_removal=(3, 0))


def warn_deprecated(
    category: Callable[[str], LangGraphDeprecationWarning], message: str, *, stacklevel: int = 2
) -> None:
    """Emit ``category(message)``, pointed at the caller ``stacklevel`` frames up.

    ``stacklevel`` counts as :func:`warnings.warn` does, from the function that
    calls this one (2: that function's caller).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     warn_deprecated(LangGraphDeprecatedSinceV05, "`a` is deprecated")
        >>> seen[0].category.__name__
        'LangGraphDeprecatedSinceV05'
    """
    warnings.warn(category(message), stacklevel=stacklevel + 1)


def durability_of(
    durability: str | None, checkpoint_during: bool | None, *, stacklevel: int = 3
) -> str | None:
    """The run's ``durability``, given the deprecated ``checkpoint_during`` flag in its place.

    ``checkpoint_during=True`` saves while the run goes on (``"async"``),
    ``False`` only when it ends (``"exit"``); an explicit ``durability`` wins.
    The warning points ``stacklevel`` frames up from this function (3: the
    caller of the run method that called it).

    Example:
        >>> durability_of("sync", None)
        'sync'
    """
    if checkpoint_during is None:
        return durability
    warn_deprecated(
        LangGraphDeprecatedSinceV10,
        "`checkpoint_during` is deprecated and will be removed. Please use `durability` instead.",
        stacklevel=stacklevel,
    )
    if durability is not None:
        return durability
    return "async" if checkpoint_during else "exit"


def without_checkpoint_during(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run options with a deprecated ``checkpoint_during`` turned into ``durability``.

    Example:
        >>> without_checkpoint_during({"stream_mode": "values"})
        {'stream_mode': 'values'}
    """
    if kwargs.get("checkpoint_during") is None:
        return kwargs
    options = dict(kwargs)
    flag = options.pop("checkpoint_during")
    options["durability"] = durability_of(options.get("durability"), flag, stacklevel=4)
    return options
