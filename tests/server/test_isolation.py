"""Two users on one server: each sees only their own runs, threads, memory and executions."""

from __future__ import annotations

from tests.server.conftest import Server


async def test_every_read_resume_and_cancel_of_another_users_run_is_404(server: Server) -> None:
    paused = (
        await server.ada.post("/api/runs", json={"target": {"graph": "approval"}, "input": {}})
    ).json()
    detail = await server.finished(server.ada, paused["run_id"])
    assert detail["status"] == "interrupted"
    run_id, thread_id = paused["run_id"], paused["thread_id"]
    attempts = [
        ("GET", f"/api/runs/{run_id}", None),
        ("GET", f"/api/runs/{run_id}/events", None),
        ("GET", f"/api/runs/{run_id}/ui-stream", None),
        ("GET", f"/api/runs/{run_id}/state", None),
        ("POST", f"/api/runs/{run_id}/resume", {"value": True}),
        ("POST", f"/api/runs/{run_id}/cancel", None),
        ("GET", f"/api/threads/{thread_id}/history", None),
        ("GET", f"/api/executions/{run_id}", None),
        ("GET", "/api/memory/ada", None),
    ]
    for method, path, body in attempts:
        response = await server.bob.request(method, path, json=body)
        assert response.status_code == 404, (method, path, response.text)
        assert response.json()["error"]["code"] == "not-found"
        # The same answer as for an id that does not exist: nothing is confirmed.
        assert run_id not in response.json()["error"]["message"].replace(run_id, "", 1)
    assert (await server.bob.get("/api/runs")).json()["runs"] == []
    assert (await server.bob.get("/api/executions")).json()["executions"] == []
    # The owner still has it all, and can still answer it.
    assert (await server.ada.get(f"/api/runs/{run_id}")).status_code == 200
    assert [r["run_id"] for r in (await server.ada.get("/api/runs")).json()["runs"]] == [run_id]
    resumed = await server.ada.post(f"/api/runs/{run_id}/resume", json={"value": True})
    assert resumed.status_code == 202


async def test_a_run_cannot_join_another_users_thread(server: Server) -> None:
    mine = (await server.ada.post("/api/runs", json={"target": {"graph": "echo"}})).json()
    await server.finished(server.ada, mine["run_id"])
    theirs = await server.bob.post(
        "/api/runs", json={"target": {"graph": "echo"}, "thread_id": mine["thread_id"]}
    )
    assert theirs.status_code == 404
    assert "thread" in theirs.json()["error"]["message"]


async def test_executions_are_the_callers_run_history(server: Server) -> None:
    run = (
        await server.ada.post(
            "/api/runs", json={"target": {"graph": "echo"}, "input": {"text": "x"}}
        )
    ).json()
    await server.finished(server.ada, run["run_id"])
    listed = (await server.ada.get("/api/executions")).json()["executions"]
    assert [e["run_id"] for e in listed] == [run["run_id"]]
    assert listed[0]["pipeline_id"] == "echo"
    detail = (await server.ada.get(f"/api/executions/{run['run_id']}")).json()
    assert [n["node"] for n in detail["nodes"]] == ["upper", "length"]
    assert detail["final_state"]["upper"] == "X"


async def test_memory_is_readable_by_its_own_user_only(server: Server) -> None:
    store = server.app.state.services.memory
    await store.put(("users", "ada", "preferences"), "food", "tacos")
    await store.put(("users", "bob", "preferences"), "food", "ramen")
    mine = await server.ada.get("/api/memory/ada")
    assert mine.status_code == 200
    assert mine.json()["preferences"] == {"food": "tacos"}
    assert [i["key"] for i in mine.json()["items"]] == ["food"]
    assert (await server.ada.get("/api/memory/bob")).status_code == 404
    assert (await server.bob.get("/api/memory/bob")).json()["preferences"] == {"food": "ramen"}
