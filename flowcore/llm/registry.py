"""Which provider and model a call goes to: per-block overrides over a configured default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from flowcore.errors import FlowcoreError
from flowcore.llm.protocol import LLMProvider

__all__ = ["ProviderRegistry"]


@dataclass(frozen=True, slots=True)
class ProviderRegistry:
    """Named providers plus the default provider and model used when a block names none.

    Example:
        >>> from flowcore.llm.scripted import ScriptedProvider
        >>> registry = ProviderRegistry({"offline": ScriptedProvider(["hi"])}, default="offline")
        >>> registry.resolve(None, None)[0].name
        'scripted'
    """

    providers: Mapping[str, LLMProvider]
    default: str
    default_model: str | None = None
    models: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.default not in self.providers:
            known = ", ".join(sorted(self.providers)) or "none"
            raise FlowcoreError(
                f"default provider {self.default!r} is not registered (providers: {known})"
            )
        object.__setattr__(self, "providers", MappingProxyType(dict(self.providers)))

    @classmethod
    def single(cls, provider: LLMProvider, *, model: str | None = None) -> ProviderRegistry:
        """A registry of one provider, registered under its own ``name``.

        Example:
            >>> from flowcore.llm.scripted import ScriptedProvider
            >>> ProviderRegistry.single(ScriptedProvider([])).default
            'scripted'
        """
        return cls({provider.name: provider}, default=provider.name, default_model=model)

    def resolve(self, provider: str | None, model: str | None) -> tuple[LLMProvider, str | None]:
        """The provider and model for a call: the block's choice, else the defaults.

        ``models`` maps a provider name to its own default model. Raises
        ``LookupError`` naming the registered providers when ``provider`` is
        unknown.

        Example:
            >>> # provider, model = registry.resolve(block.provider, block.model)
        """
        name = provider or self.default
        chosen = self.providers.get(name)
        if chosen is None:
            known = ", ".join(sorted(self.providers))
            raise LookupError(
                f"no LLM provider named {name!r} is configured (providers: {known}); "
                "register it in the ProviderRegistry or change the block's provider"
            )
        if model is not None:
            return chosen, model
        if name in self.models:
            return chosen, self.models[name]
        return chosen, self.default_model if name == self.default else None
