"""Keys, body size and rate limits, and the JSON errors every bad request gets."""

from __future__ import annotations

import httpx

from flowcore.server.keys import ApiKeys, hash_token
from tests.server.conftest import MakeServer, Server, client_for


async def test_every_api_route_needs_a_key_but_health_and_docs_do_not(server: Server) -> None:
    anonymous = server.clients["anonymous"]
    for path in ("/api/runs", "/api/blocks", "/api/pipelines", "/api/graphs", "/api/memory/ada"):
        response = await anonymous.get(path)
        assert response.status_code == 401, path
        assert "Authorization: Bearer" in response.json()["error"]["message"]
    assert (await anonymous.post("/api/clarify", json={})).status_code == 401
    assert (await anonymous.get("/healthz")).json() == {"status": "ok"}
    assert (await anonymous.get("/openapi.json")).status_code == 200
    assert (await anonymous.get("/docs")).status_code == 200
    wrong = client_for(server.app, "fc_not-a-key")
    async with wrong:
        assert (await wrong.get("/api/runs")).status_code == 401


async def test_keys_are_stored_hashed_and_a_revoked_key_stops_working(server: Server) -> None:
    db = server.app.state.services.keys.db
    rows = await db.fetchall("SELECT token_hash FROM flowcore_api_keys")
    assert hash_token(server.tokens["ada"]) in {r[0] for r in rows}
    text = await db.fetchall("SELECT * FROM flowcore_api_keys")
    assert server.tokens["ada"] not in repr(text)
    keys: ApiKeys = server.app.state.services.keys
    [ada_key] = [k for k in await keys.list() if k.user_id == "ada"]
    await keys.revoke(ada_key.key_id)
    assert (await server.ada.get("/api/runs")).status_code == 401
    assert (await server.bob.get("/api/runs")).status_code == 200


async def test_a_body_over_the_limit_gets_413(make_server: MakeServer) -> None:
    server = await make_server(max_body_bytes=2000)
    big = {"target": {"graph": "echo"}, "input": {"text": "x" * 5000}}
    response = await server.ada.post("/api/runs", json=big)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload-too-large"

    async def chunks():  # no Content-Length: counted as it arrives
        for _ in range(10):
            yield b"x" * 500

    streamed = await server.ada.post(
        "/api/runs", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413


async def test_too_many_requests_get_429_with_retry_after(make_server: MakeServer) -> None:
    server = await make_server(rate_limit=3)
    statuses = [(await server.ada.get("/api/runs")).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = await server.ada.get("/api/runs")
    assert int(limited.headers["retry-after"]) >= 1
    assert limited.json()["error"]["code"] == "rate-limited"
    # Per key: the other user is not slowed down.
    assert (await server.bob.get("/api/runs")).status_code == 200


async def test_bad_requests_are_4xx_json_errors_that_say_what_is_wrong(server: Server) -> None:
    cases: list[tuple[str, str, object, int, str]] = [
        ("POST", "/api/runs", {"target": {"graph": "nope"}}, 404, "no graph named 'nope'"),
        ("POST", "/api/runs", {"target": {}}, 422, "target"),
        ("POST", "/api/runs", {"input": {}}, 422, "target: Field required"),
        (
            "POST",
            "/api/runs",
            {"target": {"pipeline": {"id": "p"}}},
            422,
            "pipeline",
        ),
        ("POST", "/api/runs", {"target": {"pipeline_id": "missing"}}, 404, "no saved pipeline"),
        ("GET", "/api/runs/nope", None, 404, "no run 'nope'"),
        ("GET", "/api/nowhere", None, 404, "no route"),
        ("DELETE", "/api/runs", None, 405, "not allowed"),
        ("GET", "/api/blocks/nope", None, 404, "nope"),
    ]
    for method, path, body, status, words in cases:
        response = await server.ada.request(method, path, json=body)
        assert response.status_code == status, (path, body, response.text)
        error = response.json()["error"]
        assert words in error["message"] or any(words in p for p in error["problems"]), error
    broken = await server.ada.post(
        "/api/runs", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert broken.status_code == 422
    assert broken.json()["error"]["code"] == "invalid-request"


async def test_health_needs_no_key(server: Server) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=server.app), base_url="http://x"
    ) as client:
        assert (await client.get("/healthz")).status_code == 200
