"""``/api/blocks`` and ``/api/pipelines``: the registry and saved pipelines over HTTP."""

from __future__ import annotations

from tests.server.conftest import Server
from tests.server.graphs import summary_pipeline

BLOCK = {
    "id": "shout",
    "name": "Shout",
    "description": "Turn text into an excited headline",
    "kind": "llm",
    "prompt_template": "Shout: {{ text }}",
    "tags": ["headline"],
}


async def test_blocks_are_created_versioned_read_searched_and_deleted(server: Server) -> None:
    created = await server.ada.post("/api/blocks", json=BLOCK)
    assert created.status_code == 201, created.text
    assert created.json()["version"] == 1
    changed = await server.ada.put(
        "/api/blocks/shout", json={**BLOCK, "description": "Excited headlines from text"}
    )
    assert changed.status_code == 200
    assert changed.json()["version"] == 2
    assert (await server.ada.get("/api/blocks/shout?version=1")).json()["description"] == BLOCK[
        "description"
    ]
    source = (await server.ada.get("/api/blocks/shout/source")).json()
    assert source == {"id": "shout", "version": 2, "kind": "llm", "source": "Shout: {{ text }}"}
    found = (await server.ada.post("/api/blocks/search", json={"query": "headline"})).json()
    # Hybrid search ranks every block by meaning too: the one whose words match comes first.
    assert found["blocks"][0]["id"] == "shout"
    assert found["hits"][0]["fts_rank"] == 1
    assert [b["id"] for b in (await server.ada.get("/api/blocks?q=headline")).json()["blocks"]] == [
        "shout"
    ]
    listed = [b["id"] for b in (await server.ada.get("/api/blocks")).json()["blocks"]]
    assert "shout" in listed
    assert "summarize" in listed
    mismatch = await server.ada.put("/api/blocks/other", json=BLOCK)
    assert mismatch.status_code == 400
    invalid = await server.ada.post("/api/blocks", json={**BLOCK, "prompt_template": None})
    assert invalid.status_code == 422
    assert (await server.ada.delete("/api/blocks/shout")).json() == {"id": "shout", "deleted": True}
    assert (await server.ada.get("/api/blocks/shout")).status_code == 404


async def test_pipelines_are_saved_read_replaced_listed_and_deleted(server: Server) -> None:
    doc = summary_pipeline("kept")
    assert (await server.ada.post("/api/pipelines", json=doc)).status_code == 201
    got = (await server.ada.get("/api/pipelines/kept")).json()
    assert got["id"] == "kept"
    assert got["nodes"][0]["block_id"] == "summarize"
    renamed = await server.ada.put("/api/pipelines/kept", json={**doc, "name": "Kept digest"})
    assert renamed.json()["name"] == "Kept digest"
    assert [p["id"] for p in (await server.ada.get("/api/pipelines")).json()["pipelines"]] == [
        "kept"
    ]
    bad = await server.ada.post("/api/pipelines", json={"id": "x", "nodes": "no"})
    assert bad.status_code == 422
    assert bad.json()["error"]["problems"]
    assert (await server.ada.put("/api/pipelines/other", json=doc)).status_code == 400
    assert (await server.ada.delete("/api/pipelines/kept")).json()["deleted"] is True
    assert (await server.ada.get("/api/pipelines/kept")).status_code == 404
    assert (await server.ada.delete("/api/pipelines/kept")).status_code == 404


async def test_pipeline_run_blocks_until_the_result(server: Server) -> None:
    response = await server.ada.post(
        "/api/pipeline/run", json={"pipeline": summary_pipeline(), "input": {"doc": "one two"}}
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["status"] == "completed"
    assert result["output"]["results"]["n1"]["summary"]
    assert result["input_tokens"] > 0
    # It is a run like any other: listed, with its events.
    assert (await server.ada.get(f"/api/runs/{result['run_id']}")).json()["status"] == "completed"
    missing = await server.ada.post("/api/pipeline/run", json={"input": {}})
    assert missing.status_code == 400
    bad_input = await server.ada.post(
        "/api/pipeline/run", json={"pipeline": summary_pipeline(), "input": {}}
    )
    assert bad_input.status_code == 400
    assert "doc" in bad_input.json()["error"]["message"]
