"""OpenAIEmbedder through the real openai SDK, over HTTP to a loopback server."""

from __future__ import annotations

import base64
from array import array

import pytest

from flowcore.llm import ProviderError
from flowcore.search import EmbeddingError, OpenAIEmbedder
from tests.llm.loopback import LoopbackServer, Reply

KEY = "sk-test-0123456789abcdefghijklmnop"


def embeddings(*vectors: list[float], order: list[int] | None = None) -> Reply:
    indexes = order if order is not None else list(range(len(vectors)))
    return Reply(
        body={
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in indexes],
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 4, "total_tokens": 4},
        }
    )


async def test_embeds_texts_in_input_order_in_one_request() -> None:
    async with LoopbackServer() as server:
        server.replies.append(embeddings([1.0, 0.0], [0.0, 1.0], order=[1, 0]))
        embedder = OpenAIEmbedder(
            api_key=KEY, model="my-embedder", dimensions=2, base_url=server.url + "/v1"
        )
        vectors = await embedder.embed(["send mail", "weather"])
        await embedder.aclose()
    assert vectors == [[1.0, 0.0], [0.0, 1.0]]
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/embeddings")
    assert request.body["model"] == "my-embedder"
    assert request.body["input"] == ["send mail", "weather"]
    assert "dimensions" not in request.body  # not a text-embedding-3 model: never sent
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_shortened_text_embedding_3_vectors_send_dimensions() -> None:
    async with LoopbackServer() as server:
        server.replies.append(embeddings([0.6, 0.8]))
        embedder = OpenAIEmbedder(api_key=KEY, dimensions=2, base_url=server.url)
        assert embedder.name == "openai:text-embedding-3-small@2"
        assert await embedder.embed(["x"]) == [[0.6, 0.8]]
        await embedder.aclose()
    assert server.requests[0].body["dimensions"] == 2


async def test_an_http_error_is_an_embedding_error_without_the_key() -> None:
    async with LoopbackServer() as server:
        server.replies.append(
            Reply(
                401,
                {
                    "error": {
                        "message": f"Incorrect API key provided: {KEY}",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            )
        )
        embedder = OpenAIEmbedder(api_key=KEY, base_url=server.url)
        with pytest.raises(EmbeddingError) as caught:
            await embedder.embed(["x"])
        await embedder.aclose()
    error = caught.value
    assert error.embedder == "openai:text-embedding-3-small"
    assert isinstance(error.__cause__, ProviderError)
    assert error.__cause__.kind == "auth"
    for text in (str(error), str(error.__cause__), repr(embedder)):
        assert KEY not in text
    assert "check the API key" in str(error)


async def test_a_reply_with_the_wrong_number_of_vectors_is_refused() -> None:
    async with LoopbackServer() as server:
        server.replies.append(embeddings([1.0, 0.0]))
        embedder = OpenAIEmbedder(api_key=KEY, model="m", dimensions=2, base_url=server.url)
        with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 texts"):
            await embedder.embed(["a", "b"])
        await embedder.aclose()


async def test_a_vector_of_the_wrong_length_is_refused() -> None:
    async with LoopbackServer() as server:
        server.replies.append(embeddings([1.0, 0.0, 0.0]))
        embedder = OpenAIEmbedder(api_key=KEY, model="m", dimensions=2, base_url=server.url)
        with pytest.raises(EmbeddingError, match="has 3 numbers, but the embedder says"):
            await embedder.embed(["a"])
        await embedder.aclose()


async def test_an_unreachable_server_is_an_embedding_error() -> None:
    async with LoopbackServer() as server:
        url = server.url
    embedder = OpenAIEmbedder(api_key=KEY, model="m", dimensions=2, base_url=url, timeout=5)
    with pytest.raises(EmbeddingError) as caught:
        await embedder.embed(["a"])
    await embedder.aclose()
    assert isinstance(caught.value.__cause__, ProviderError)
    assert caught.value.__cause__.kind == "connection"


def test_an_unknown_model_needs_its_dimensions() -> None:
    with pytest.raises(EmbeddingError, match="needs dimensions="):
        OpenAIEmbedder(api_key=KEY, model="nomic-embed-text")
    with pytest.raises(EmbeddingError, match="must be a positive int"):
        OpenAIEmbedder(api_key=KEY, dimensions=0)


async def test_no_texts_make_no_request() -> None:
    async with LoopbackServer() as server:
        embedder = OpenAIEmbedder(api_key=KEY, base_url=server.url)
        assert await embedder.embed([]) == []
        await embedder.aclose()
    assert server.requests == []


async def test_base64_replies_are_decoded_as_openai_sends_them() -> None:
    # The SDK asks for base64 (4 bytes a float) unless told otherwise; OpenAI answers so.
    packed = base64.b64encode(array("f", [0.5, -0.25]).tobytes()).decode()
    async with LoopbackServer() as server:
        server.replies.append(
            Reply(
                body={
                    "object": "list",
                    "data": [{"object": "embedding", "index": 0, "embedding": packed}],
                    "model": "m",
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }
            )
        )
        embedder = OpenAIEmbedder(api_key=KEY, model="m", dimensions=2, base_url=server.url)
        assert await embedder.embed(["x"]) == [[0.5, -0.25]]
        await embedder.aclose()
    assert server.requests[0].body["encoding_format"] == "base64"


async def test_an_empty_reply_is_an_embedding_error() -> None:
    async with LoopbackServer() as server:
        server.replies.append(Reply(body={"object": "list", "data": [], "model": "m", "usage": {}}))
        embedder = OpenAIEmbedder(api_key=KEY, model="m", dimensions=2, base_url=server.url)
        with pytest.raises(EmbeddingError, match="openai:m"):
            await embedder.embed(["x"])
        await embedder.aclose()
