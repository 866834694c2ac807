"""Spec: a clarifying conversation outlives the server that started it (SQLite and Postgres).

``/api/clarify`` threads are rows in the server's tables, so a question
asked before a restart is answered after it, still only by its owner.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

from flowcore.storage import DatabaseTarget
from tests.server.conftest import start_server

VAGUE = "research stuff"
ANSWER = "a long weekly report; summarize it, then count the words of it"


async def test_a_question_asked_before_a_restart_is_answered_after_it(
    tmp_path: Path, database: DatabaseTarget | None
) -> None:
    path = tmp_path / "flowcore.db"
    async with AsyncExitStack() as stack:
        before = await start_server(stack, path, database)
        asked = (await before.ada.post("/api/clarify", json={"intent": VAGUE})).json()
    assert asked["status"] == "question"
    thread = asked["thread_id"]

    async with AsyncExitStack() as stack:
        after = await start_server(stack, path, database)
        stolen = await after.bob.post("/api/clarify", json={"thread_id": thread, "answer": ANSWER})
        assert stolen.status_code == 404
        answered = await after.ada.post(
            "/api/clarify", json={"thread_id": thread, "answer": ANSWER}
        )
        assert answered.status_code == 200, answered.text
        ready = answered.json()
        assert ready["status"] == "ready"
        assert ready["user_messages"] == 2
        assert ready["refined_intent"].startswith("Goal: research stuff")
        # Nothing is pending any more, after a restart too.
        again = await after.ada.post("/api/clarify", json={"thread_id": thread, "answer": "x"})
        assert again.status_code == 409


async def test_only_the_newest_threads_are_kept_past_the_cap(
    tmp_path: Path, database: DatabaseTarget | None
) -> None:
    async with AsyncExitStack() as stack:
        server = await start_server(stack, tmp_path / "flowcore.db", database)
        store = server.app.state.services.thinker.threads
        store.keep = 2
        threads = []
        for _ in range(3):
            asked = (await server.ada.post("/api/clarify", json={"intent": VAGUE})).json()
            threads.append(asked["thread_id"])
        assert await store.get(threads[0]) is None
        assert [(await store.get(t)).thread_id for t in threads[1:]] == threads[1:]
        gone = await server.ada.post(
            "/api/clarify", json={"thread_id": threads[0], "answer": ANSWER}
        )
        assert gone.status_code == 404
