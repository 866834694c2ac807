"""Spec: the Thinker over HTTP: clarify, create-agent (blocking and SSE), automate, search."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

from tests.server.conftest import Server

VAGUE = "research stuff"
ANSWER = "a long weekly report; summarize it, then count the words of it"


async def test_clarify_asks_then_becomes_ready_on_the_callers_thread(server: Server) -> None:
    first = await server.ada.post("/api/clarify", json={"intent": VAGUE})
    assert first.status_code == 200, first.text
    asked = first.json()
    assert asked["status"] == "question"
    assert asked["ready"] is False
    assert asked["question"] == "What will you give it as input, and what should it produce?"
    assert asked["user_messages"] == 1
    assert asked["tokens"]["input_tokens"] > 0
    thread = asked["thread_id"]

    # Another user's thread id is "not found", like an id that never existed.
    stolen = await server.bob.post("/api/clarify", json={"thread_id": thread, "answer": ANSWER})
    assert stolen.status_code == 404
    assert "no clarifying thread" in stolen.json()["error"]["message"]

    second = await server.ada.post("/api/clarify", json={"thread_id": thread, "answer": ANSWER})
    assert second.status_code == 200, second.text
    ready = second.json()
    assert ready["thread_id"] == thread
    assert ready["status"] == "ready"
    assert ready["ready"] is True
    assert ready["user_messages"] == 2
    assert ready["refined_intent"].startswith("Goal: research stuff")
    assert set(ready["spec"]) == {"goal", "steps", "inputs", "outputs", "edge_cases"}

    # Nothing is pending on a ready thread.
    again = await server.ada.post("/api/clarify", json={"thread_id": thread, "answer": "more"})
    assert again.status_code == 409


async def test_clarify_takes_a_whole_conversation(server: Server) -> None:
    messages = [
        {"role": "user", "content": "summarize stuff"},
        {"role": "assistant", "content": "What will you give it?"},
        {"role": "user", "content": ANSWER},
    ]
    response = await server.ada.post("/api/clarify", json={"messages": messages})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "ready"


async def test_create_agent_returns_a_pipeline_that_runs(server: Server) -> None:
    response = await server.ada.post(
        "/api/create-agent", json={"intent": "Count the lines of a poem"}
    )
    assert response.status_code == 200, response.text
    made = response.json()
    assert made["status"] == "complete"
    assert made["created"] == ["count_lines"]
    assert made["log"]
    assert made["tokens"]["input_tokens"] > 0
    pipeline = made["pipeline_json"]
    assert pipeline["nodes"] == [
        {"id": "n1", "block_id": "count_lines", "inputs": {"text": "<<input.text>>"}}
    ]
    started = await server.ada.post(
        "/api/runs", json={"target": {"pipeline": pipeline}, "input": {"text": "a\nb\nc"}}
    )
    assert started.status_code == 201, started.text
    run = await server.finished(server.ada, started.json()["run_id"])
    assert run["status"] == "completed"
    # The created block is in the registry for everyone's later searches.
    assert (await server.bob.get("/api/blocks/count_lines")).json()["created_by"] == "thinker"


def _events(text: str) -> list[dict[str, Any]]:
    """Seed 003's frames: ``event: <type>`` then one ``data:`` line of JSON, blank line after."""
    events = []
    for frame in text.split("\n\n"):
        if not frame.strip():
            continue
        head, body = frame.split("\n")
        assert head.startswith("event: "), frame
        assert body.startswith("data: "), frame
        data = json.loads(body.removeprefix("data: "))
        assert data["type"] == head.removeprefix("event: ")
        assert isinstance(data["ts"], float)
        events.append(data)
    return events


async def test_the_stream_sends_seed_003_events_ending_with_complete(server: Server) -> None:
    response = await server.ada.post("/api/create-agent/stream", json={"intent": "Reverse a text"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _events(response.text)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "start"
    assert kinds[-1] == "complete"
    assert kinds.count("complete") == 1
    assert {"stage", "llm_prompt", "llm_response", "decompose_blocks"} <= set(kinds)
    assert {"search_missing", "creating_block", "block_created", "block_test_passed"} <= set(kinds)
    result = events[-1]["result"]
    assert result["status"] == "complete"
    assert result["pipeline_json"]["id"] == "reverse_text_pipeline"
    assert isinstance(result["log"], list)

    # The GET form (for EventSource) streams the same kind of run.
    got = await server.ada.get("/api/create-agent/stream", params={"intent": "Reverse a text"})
    assert got.status_code == 200
    again = _events(got.text)
    assert again[0]["type"] == "start"
    assert again[-1]["type"] == "complete"
    assert again[-1]["result"]["status"] == "complete"


async def test_automate_runs_for_its_caller_only(server: Server) -> None:
    response = await server.ada.post(
        "/api/automate",
        json={
            "intent": "Extract the numbers from a text, then compute the average",
            "input": {"text": "between 10 and 20"},
        },
    )
    assert response.status_code == 200, response.text
    done = response.json()
    assert done["status"] == "completed"
    assert done["create"]["status"] == "complete"
    assert done["problems"] == []
    run = done["run"]
    assert run["status"] == "completed"
    assert run["output"]["results"]["n2"] == {"mean": 15.0}

    ada_runs = [r["run_id"] for r in (await server.ada.get("/api/runs")).json()["runs"]]
    bob_runs = [r["run_id"] for r in (await server.bob.get("/api/runs")).json()["runs"]]
    assert run["run_id"] in ada_runs
    assert run["run_id"] not in bob_runs
    assert (await server.bob.get(f"/api/runs/{run['run_id']}")).status_code == 404
    assert (await server.ada.get(f"/api/runs/{run['run_id']}")).json()["status"] == "completed"


async def test_automate_names_inputs_that_do_not_fit_and_runs_nothing(server: Server) -> None:
    response = await server.ada.post(
        "/api/automate", json={"intent": "Reverse a text", "input": {"txt": "abc"}}
    )
    assert response.status_code == 200, response.text
    done = response.json()
    assert done["status"] == "not_run"
    assert done["run"] is None
    assert done["create"]["status"] == "complete"
    assert any("input 'text' is missing" in p for p in done["problems"])
    assert (await server.ada.get("/api/runs")).json()["runs"] == []


async def test_bad_input_gets_a_4xx_naming_the_problem(server: Server) -> None:
    ada = server.ada
    cases: list[tuple[str, dict[str, Any], int, str]] = [
        ("/api/clarify", {}, 400, "give exactly one of"),
        ("/api/clarify", {"intent": "x", "thread_id": "t"}, 400, "give exactly one of"),
        ("/api/clarify", {"thread_id": "t"}, 400, "give exactly one of"),
        ("/api/clarify", {"thread_id": "clarify-none", "answer": "x"}, 404, "no clarifying"),
        ("/api/clarify", {"intent": "   "}, 422, "non-empty text"),
        ("/api/clarify", {"messages": [{"role": "assistant", "content": "hi"}]}, 422, "[0]"),
        ("/api/create-agent", {"intent": ""}, 422, "intent"),
        ("/api/create-agent", {"intent": "  "}, 422, "intent must be non-empty text"),
        ("/api/create-agent", {"intent": "x" * 4001}, 422, "intent"),
        ("/api/create-agent", {"intent": "x", "extra": 1}, 422, "extra"),
        ("/api/create-agent/stream", {"intent": "  "}, 422, "intent must be non-empty"),
        ("/api/automate", {"intent": "  "}, 422, "intent must be non-empty text"),
        ("/api/automate", {"intent": "x", "input": []}, 422, "input"),
    ]
    for path, body, status, fragment in cases:
        response = await ada.post(path, json=body)
        assert response.status_code == status, (path, body, response.text)
        error = response.json()["error"]
        assert fragment in error["message"] + " ".join(error["problems"]), (path, body, error)
    empty = await ada.get("/api/create-agent/stream", params={"intent": ""})
    assert empty.status_code == 422


async def test_block_search_says_which_mode_ran(server: Server) -> None:
    response = await server.ada.post("/api/blocks/search", json={"query": "summarize a text"})
    assert response.status_code == 200, response.text
    found = response.json()
    # Hybrid when the embed extra (WordLlama) is installed, full text otherwise; a Postgres
    # registry is searched by Postgres' full text (block vectors live in SQLite).
    semantic = importlib.util.find_spec("wordllama") and server.database is None
    expected = "hybrid" if semantic else "text"
    assert found["mode"] == expected
    assert found["blocks"][0]["id"] == "summarize"
    assert [hit["id"] for hit in found["hits"]] == [b["id"] for b in found["blocks"]]
    assert found["hits"][0]["fts_rank"] == 1


def _use_model(server: Server, model: Any) -> None:
    """Have the server's Thinker ask ``model`` (the stand-in for a model that answers badly)."""
    from flowcore.llm import ProviderRegistry

    server.app.state.services.thinker.thinker.executor.providers = ProviderRegistry.single(model)


async def test_a_model_the_thinker_cannot_use_is_a_failed_result_not_a_5xx(
    server: Server,
) -> None:
    from flowcore.llm.scripted import ScriptedProvider

    _use_model(server, ScriptedProvider(["this is not JSON"] * 100))
    made = await server.ada.post("/api/create-agent", json={"intent": "Reverse a text"})
    assert made.status_code == 200, made.text
    assert made.json()["status"] == "failed"
    assert made.json()["pipeline_json"] is None
    assert made.json()["log"]

    done = await server.ada.post(
        "/api/automate", json={"intent": "Reverse a text", "input": {"text": "abc"}}
    )
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "not_run"
    assert done.json()["problems"][0] == "no pipeline to run: the Thinker's result is 'failed'"

    streamed = await server.ada.post("/api/create-agent/stream", json={"intent": "Reverse a text"})
    events = _events(streamed.text)
    assert events[-1]["type"] == "complete"
    assert events[-1]["result"]["status"] == "failed"


async def test_a_clarifier_run_that_fails_says_so_and_keeps_the_question_open(
    server: Server,
) -> None:
    from flowcore.llm.scripted import ScriptedProvider

    asked = (await server.ada.post("/api/clarify", json={"intent": VAGUE})).json()
    _use_model(server, ScriptedProvider(["this is not JSON"] * 20))
    failed = await server.ada.post(
        "/api/clarify", json={"thread_id": asked["thread_id"], "answer": ANSWER}
    )
    assert failed.status_code == 200, failed.text
    assert failed.json()["status"] == "failed"
    assert failed.json()["error"]
    assert failed.json()["user_messages"] == 1  # the answer was not kept: send it again


async def test_the_app_builds_one_thinker_on_its_stores_and_closes_it_on_shutdown(
    server: Server,
) -> None:
    services = server.app.state.services
    thinker = services.thinker.thinker
    runner = services.runs.executor.runner
    assert thinker.blocks is services.blocks
    assert thinker.checkpointer is runner.checkpointer
    assert thinker.executor.tools is runner.executor.tools
    assert thinker.executor.memory is runner.executor.memory
    assert thinker.executor.providers.resolve(None, None)[0].name == "thinker-offline"
    assert runner.executor.providers.resolve(None, None)[0].name == "offline"
    async with server.app.router.lifespan_context(server.app):
        pass
    assert services.thinker.closed
