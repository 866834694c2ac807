"""The served OpenAPI document describes every route: bodies, answers and errors."""

from __future__ import annotations

from tests.server.conftest import Server

SEED_003 = {
    "/api/clarify",
    "/api/create-agent",
    "/api/create-agent/stream",
    "/api/pipeline/run",
    "/api/automate",
    "/api/blocks",
    "/api/blocks/{block_id}/source",
    "/api/blocks/search",
    "/api/pipelines",
    "/api/pipelines/{pipeline_id}",
    "/api/executions",
    "/api/executions/{run_id}",
    "/api/memory/{user_id}",
}


async def test_every_operation_declares_its_bodies_and_error_answers(server: Server) -> None:
    document = (await server.clients["anonymous"].get("/openapi.json")).json()
    paths = document["paths"]
    assert set(paths) >= SEED_003
    assert {"/api/runs", "/api/runs/{run_id}/events", "/api/runs/{run_id}/resume"} <= set(paths)
    assert "HTTPBearer" in document["components"]["securitySchemes"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            responses = operation["responses"]
            success = [code for code in responses if code.startswith("2")]
            assert success, where
            if path.startswith("/api/"):
                assert operation.get("security"), where
                for code in ("400", "401", "413", "422", "429"):
                    error = responses[code]["content"]["application/json"]["schema"]
                    assert error == {"$ref": "#/components/schemas/ErrorBody"}, (where, code)
            content = responses[success[0]].get("content", {})
            if "/create-agent/stream" in path:
                continue
            assert content, where
            schema = next(iter(content.values()))["schema"]
            assert schema, where
            if method in ("post", "put") and "{run_id}/cancel" not in path:
                assert "requestBody" in operation, where
