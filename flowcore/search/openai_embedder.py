"""``OpenAIEmbedder``: vectors from an OpenAI-compatible ``/embeddings`` endpoint.

Uses the official ``openai`` SDK (``client.embeddings.create``), so any
server that speaks the format works through ``base_url``. The SDK's retries
are off (a search falls back to full-text search instead of waiting), and the
API key never appears in a ``repr`` or an error: it is scrubbed from the
SDK's error and from the :class:`~flowcore.search.EmbeddingError` raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowcore.llm.sdk_errors import map_sdk_error
from flowcore.search.embedder import EmbeddingError, Vector, check_vectors
from flowcore.secrets import DEFAULT_MIN_LENGTH, NO_REDACTION, SecretRedactor, scrub_error

__all__ = ["OpenAIEmbedder"]

# text-embedding-3-small's native length; other models need dimensions= said.
_KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """An :class:`~flowcore.search.Embedder` on the OpenAI embeddings API.

    ``dimensions`` is required for models flowcore does not know; for the
    ``text-embedding-3`` models it may shorten the vectors (the API's own
    ``dimensions`` parameter is sent then).

    Example:
        >>> embedder = OpenAIEmbedder(api_key="sk-test", model="text-embedding-3-small")
        >>> embedder.name, embedder.dimensions
        ('openai:text-embedding-3-small', 1536)
        >>> # vectors = await embedder.embed(["search the web"])
    """

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "text-embedding-3-small",
        dimensions: int | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        import openai  # heavy: loaded only when an OpenAI embedder is made

        native = _KNOWN_DIMENSIONS.get(model)
        if dimensions is None and native is None:
            raise EmbeddingError(
                f"OpenAIEmbedder(model={model!r}) needs dimensions=<vector length>: flowcore "
                "does not know that model's length",
                embedder=f"openai:{model}",
            )
        if dimensions is not None and (isinstance(dimensions, bool) or dimensions < 1):
            raise EmbeddingError(
                f"OpenAIEmbedder(dimensions={dimensions!r}) must be a positive int",
                embedder=f"openai:{model}",
            )
        self.model = model
        self.base_url = base_url
        self._dimensions = dimensions if dimensions is not None else int(native or 0)
        # Sent only when it shortens a text-embedding-3 vector; other models refuse it.
        self._send_dimensions = (
            dimensions is not None
            and native is not None
            and dimensions != native
            and model.startswith("text-embedding-3")
        )
        self._redactor = (
            SecretRedactor([api_key]) if len(api_key) >= DEFAULT_MIN_LENGTH else NO_REDACTION
        )
        self._client = openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    @property
    def name(self) -> str:
        """``openai:<model>``, plus ``@<dimensions>`` when the vectors are shortened."""
        suffix = f"@{self._dimensions}" if self._send_dimensions else ""
        return f"openai:{self.model}{suffix}"

    @property
    def dimensions(self) -> int:
        """The vector length."""
        return self._dimensions

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r}, api_key=***)"

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, in order, from one API call.

        Raises:
            EmbeddingError: The call failed (status, connection, timeout) or the
                reply is malformed; its cause is the provider error, key scrubbed.

        Example:
            >>> # [v] = await embedder.embed(["translate a document"])
        """
        batch = [str(t) for t in texts]
        if not batch:
            return []
        args: dict[str, Any] = {"model": self.model, "input": batch}
        if self._send_dimensions:
            args["dimensions"] = self._dimensions
        try:
            raw = await self._client.embeddings.create(**args)
        except Exception as exc:
            cause = scrub_error(map_sdk_error(exc, "openai") or exc, self._redactor)
            scrub_error(exc, self._redactor)
            raise EmbeddingError(f"{self.name}: {cause}", embedder=self.name) from cause
        try:
            # The API may answer out of order; each item says which input it is.
            rows = sorted(raw.data, key=lambda item: item.index)
            vectors = [list(item.embedding) for item in rows]
        except (AttributeError, TypeError) as exc:
            raise EmbeddingError(
                f"{self.name}: the reply is not an embeddings list ({exc})", embedder=self.name
            ) from None
        return check_vectors(self, batch, vectors)

    async def aclose(self) -> None:
        """Close the HTTP client.

        Example:
            >>> # await embedder.aclose()
        """
        await self._client.close()
