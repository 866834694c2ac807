"""``/api/runs``: start any target, follow its events, answer it, stop it, read its state."""

from __future__ import annotations

import asyncio

from flowcore.port.sse import parse_sse
from tests.server.conftest import Server
from tests.server.graphs import approval_pipeline, summary_pipeline


async def test_a_registered_graph_runs_in_the_background_and_its_events_end_with_done(
    server: Server,
) -> None:
    started = await server.ada.post(
        "/api/runs", json={"target": {"graph": "echo"}, "input": {"text": "hi"}}
    )
    assert started.status_code == 201, started.text
    body = started.json()
    assert body["status"] == "running"
    assert body["thread_id"]
    detail = await server.finished(server.ada, body["run_id"])
    assert detail["status"] == "completed"
    assert detail["output"] == {"text": "hi", "upper": "HI", "length": 2}
    assert [n["node"] for n in detail["nodes"]] == ["upper", "length"]
    assert {n["status"] for n in detail["nodes"]} == {"completed"}
    assert "flowchart" in detail["mermaid"]
    assert "upper" in detail["mermaid"]
    events = parse_sse((await server.ada.get(f"/api/runs/{body['run_id']}/events")).text)
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[0].type == "run_start"
    assert [e.type for e in events].count("done") == 1


async def test_a_pipeline_document_runs_and_reports_tokens_per_node(server: Server) -> None:
    started = await server.ada.post(
        "/api/runs",
        json={"target": {"pipeline": summary_pipeline()}, "input": {"doc": "a b c d e f g"}},
    )
    assert started.status_code == 201, started.text
    detail = await server.finished(server.ada, started.json()["run_id"])
    assert detail["status"] == "completed"
    node = next(n for n in detail["nodes"] if n["node"] == "n1")
    assert node["inputs"] == {"text": "<<input.doc>>"}
    assert node["outputs"]["summary"]
    assert node["input_tokens"] > 0
    assert detail["input_tokens"] >= node["input_tokens"]
    listed = (await server.ada.get("/api/runs")).json()["runs"]
    assert listed[0]["run_id"] == detail["run_id"]
    assert listed[0]["target"] == "digest"
    assert listed[0]["input_tokens"] == detail["input_tokens"]


async def test_a_saved_pipeline_runs_by_id_and_a_plan_runs_inline(server: Server) -> None:
    saved = await server.ada.post("/api/pipelines", json=summary_pipeline("saved_digest"))
    assert saved.status_code == 201, saved.text
    started = await server.ada.post(
        "/api/runs", json={"target": {"pipeline_id": "saved_digest"}, "input": {"doc": "x y"}}
    )
    assert started.status_code == 201, started.text
    assert (await server.finished(server.ada, started.json()["run_id"]))["status"] == "completed"
    plan = {
        "plan_id": "tiny_plan",
        "entry_step_id": "s1",
        "steps": [{"step_id": "s1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}],
    }
    started = await server.ada.post(
        "/api/runs", json={"target": {"plan": plan}, "input": {"doc": "p q r"}}
    )
    assert started.status_code == 201, started.text
    assert (await server.finished(server.ada, started.json()["run_id"]))["status"] == "completed"


async def test_a_paused_run_shows_its_question_and_resumes_on_the_same_thread(
    server: Server,
) -> None:
    started = (
        await server.ada.post(
            "/api/runs", json={"target": {"graph": "approval"}, "input": {"draft": "ship it"}}
        )
    ).json()
    paused = await server.finished(server.ada, started["run_id"])
    assert paused["status"] == "interrupted"
    [question] = paused["interrupts"]
    assert question["node"] == "approve"
    assert question["value"]["question"] == "send this?"
    state = (await server.ada.get(f"/api/runs/{started['run_id']}/state")).json()
    assert state["next"] == ["approve"]
    assert state["values"]["draft"] == "Dear team, ship it"

    resumed = await server.ada.post(
        f"/api/runs/{started['run_id']}/resume",
        json={"value": True, "interrupt_id": question["interrupt_id"]},
    )
    assert resumed.status_code == 202, resumed.text
    follow_up = resumed.json()
    assert follow_up["thread_id"] == started["thread_id"]
    assert follow_up["run_id"] != started["run_id"]
    done = await server.finished(server.ada, follow_up["run_id"])
    assert done["status"] == "completed"
    assert done["output"]["sent"] is True
    assert done["continues"] == started["run_id"]
    again = await server.ada.post(f"/api/runs/{started['run_id']}/resume", json={"value": 1})
    assert again.status_code == 409
    assert "already resumed" in again.json()["error"]["message"]
    history = (await server.ada.get(f"/api/threads/{started['thread_id']}/history")).json()
    assert {r["run_id"] for r in history["runs"]} == {started["run_id"], follow_up["run_id"]}
    assert history["checkpoints"]


async def test_a_pipeline_pausing_for_a_human_resumes_through_the_api(server: Server) -> None:
    started = (
        await server.ada.post(
            "/api/runs",
            json={"target": {"pipeline": approval_pipeline()}, "input": {"doc": "news of today"}},
        )
    ).json()
    paused = await server.finished(server.ada, started["run_id"])
    assert paused["status"] == "interrupted", paused
    resumed = await server.ada.post(
        f"/api/runs/{started['run_id']}/resume", json={"value": {"approved": True}}
    )
    assert resumed.status_code == 202, resumed.text
    done = await server.finished(server.ada, resumed.json()["run_id"])
    assert done["status"] == "completed", done


async def test_cancel_stops_a_running_run_and_its_stream_ends_cancelled(server: Server) -> None:
    started = (await server.ada.post("/api/runs", json={"target": {"graph": "gated"}})).json()
    await asyncio.wait_for(server.gate.entered.wait(), 30)
    live = await server.ada.get(f"/api/runs/{started['run_id']}")
    assert live.json()["status"] == "running"
    assert {n["node"]: n["status"] for n in live.json()["nodes"]} == {
        "start": "completed",
        "wait": "running",
    }
    cancelled = await server.ada.post(f"/api/runs/{started['run_id']}/cancel")
    assert cancelled.status_code == 202
    detail = await server.finished(server.ada, started["run_id"])
    assert detail["status"] == "cancelled"
    again = await server.ada.post(f"/api/runs/{started['run_id']}/cancel")
    assert again.status_code == 409


async def test_the_ui_stream_speaks_the_ai_sdk_protocol(server: Server) -> None:
    started = (
        await server.ada.post("/api/runs", json={"target": {"graph": "echo"}, "input": {}})
    ).json()
    response = await server.ada.get(f"/api/runs/{started['run_id']}/ui-stream")
    assert response.status_code == 200
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.text.rstrip().endswith("data: [DONE]")


async def test_graphs_are_listed_by_name(server: Server) -> None:
    listed = (await server.ada.get("/api/graphs")).json()["graphs"]
    assert [g["name"] for g in listed] == ["approval", "echo", "gated"]
    assert {g["kind"] for g in listed} == {"graph"}
