"""An approval flow that pauses for a human and is resumed by another process.

A writer drafts a refund reply, then ``review`` asks a human with
``interrupt()``. The run stops there with status ``interrupted`` and the
thread is saved in a SQLite file. Later (here: a second process) the thread is
resumed with the human's answer, and the flow finishes: it sends the reply
if approved, or logs the rejection.

Run the whole demo (two processes, one database file)::

    python examples/approval_flow.py

or drive it by hand::

    python examples/approval_flow.py start  --db approvals.db --thread refund-42
    python examples/approval_flow.py answer --db approvals.db --thread refund-42 --answer yes
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import subprocess
import sys
import tempfile
from typing import Annotated, Any, Literal, TypedDict

from flowcore import END, START, Graph, Resume, append, interrupt
from flowcore.checkpoint import SqliteCheckpointer


class Ticket(TypedDict):
    customer: str
    amount: float
    draft: str
    approved: bool
    log: Annotated[list[str], append]


def draft_reply(state: Ticket) -> dict[str, Any]:
    text = f"Dear {state['customer']}, we refund {state['amount']:.2f} EUR."
    return {"draft": text, "log": ["drafted"]}


def review(state: Ticket) -> dict[str, Any]:
    # Everything before interrupt() runs again on resume, so nothing with a
    # side effect goes here.
    answer = interrupt({"question": "Send this reply?", "draft": state["draft"]})
    return {"approved": answer == "yes", "log": [f"reviewed: {answer}"]}


def route(state: Ticket) -> Literal["send", "reject"]:
    return "send" if state["approved"] else "reject"


def send(state: Ticket) -> dict[str, Any]:
    return {"log": ["sent"]}


def reject(state: Ticket) -> dict[str, Any]:
    return {"log": ["rejected"]}


def build(store: SqliteCheckpointer) -> Any:
    graph = Graph(Ticket, name="approval")
    graph.add_node("draft_reply", draft_reply).add_node("review", review)
    graph.add_node("send", send).add_node("reject", reject)
    graph.add_edge(START, "draft_reply").add_edge("draft_reply", "review")
    graph.add_conditional_edges("review", route)
    graph.add_edge("send", END).add_edge("reject", END)
    return graph.compile(checkpointer=store)


async def start(db: str, thread: str) -> None:
    store = SqliteCheckpointer(db)
    async with store:
        app = build(store)
        result = await app.run({"customer": "Ada", "amount": 42.0, "log": []}, thread_id=thread)
        print(f"[start]  status: {result.status}")
        for pending in result.interrupts:
            print(f"[start]  waiting: {pending.value['question']} {pending.value['draft']!r}")


async def answer(db: str, thread: str, reply: str) -> None:
    store = SqliteCheckpointer(db)
    async with store:
        app = build(store)
        before = await app.get_state(thread)
        print(f"[answer] resuming at {', '.join(before.next)} with {reply!r}")
        result = await app.run(Resume(reply), thread_id=thread)
        print(f"[answer] status: {result.status}")
        print(f"[answer] log: {result.state['log']}")
        history = await app.get_state_history(thread)
        print(f"[answer] checkpoints in the thread: {len(history)}")


def demo() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = str(pathlib.Path(tmp) / "approvals.db")
        me = str(pathlib.Path(__file__).resolve())
        for step in (
            ["start", "--db", db, "--thread", "refund-42"],
            ["answer", "--db", db, "--thread", "refund-42", "--answer", "yes"],
        ):
            # Each step is its own process: nothing survives but the database file.
            done = subprocess.run([sys.executable, me, *step], capture_output=True, text=True)
            sys.stdout.write(done.stdout)
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                raise SystemExit(done.returncode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    for name in ("start", "answer"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--db", required=True)
        cmd.add_argument("--thread", required=True)
        if name == "answer":
            cmd.add_argument("--answer", required=True)
    args = parser.parse_args()
    if args.command == "start":
        asyncio.run(start(args.db, args.thread))
    elif args.command == "answer":
        asyncio.run(answer(args.db, args.thread, args.answer))
    else:
        demo()


if __name__ == "__main__":
    main()
