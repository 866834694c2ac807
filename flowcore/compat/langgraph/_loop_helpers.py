"""Pieces the compat run loop's modules share.

Checkpoint ids (time-ordered, as LangGraph's), the empty checkpoint, and small
readers of interrupts and durability settings.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from flowcore.compat.langgraph._types import Interrupt
from flowcore.runtime.durability import Durability

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
Sink = Callable[[tuple[str, ...], str, Any], None]
# The id new_checkpoint_id made last, and its time.
_last_made: tuple[str, int] = ("", 0)


def new_checkpoint_id(after: str | None = None) -> str:
    """A time-ordered id that sorts after ``after`` (so newest-first listing works).

    Example:
        >>> first = new_checkpoint_id()
        >>> new_checkpoint_id(first) > first
        True
    """
    global _last_made
    now = time.time_ns()
    if after:
        # A run passes the id it made last: its time is remembered, not parsed again.
        last = _last_made
        previous = last[1] if after is last[0] else _id_time(after)
        if now <= previous:
            now = previous + 1
    # The tail only has to keep two ids of the same nanosecond apart; it is not a secret.
    tail = random.getrandbits(64)
    # The 32 hex digits of (time, tail) in one format call, cut into 8-4-4-4-12 groups
    # (the time has 16 digits until the year 2554).
    digits = f"{now:016x}{tail:016x}"
    made = f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"
    if len(digits) != 32:
        made = (
            f"{now >> 32:08x}-{(now >> 16) & 0xFFFF:04x}-{now & 0xFFFF:04x}-"
            f"{tail >> 48:04x}-{tail & 0xFFFFFFFFFFFF:012x}"
        )
    _last_made = (made, now)  # one tuple, replaced whole: other threads see a matching pair
    return made


# The second utc_now_iso() formatted last, and its text up to the seconds.
_last_second: tuple[int, str] = (-1, "")


def utc_now_iso() -> str:
    """``datetime.now(UTC).isoformat()``: the text of the current UTC time, made cheaply.

    The date and time up to the seconds are formatted once per second.

    Example:
        >>> from datetime import datetime
        >>> datetime.fromisoformat(utc_now_iso()).utcoffset().total_seconds()
        0.0
    """
    global _last_second
    seconds, rest = divmod(time.time_ns(), 1_000_000_000)
    last = _last_second
    if last[0] == seconds:
        head = last[1]
    else:
        head = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _last_second = (seconds, head)  # one tuple, replaced whole: safe across threads
    micros = rest // 1000
    # isoformat() leaves the fraction out when it is zero.
    return f"{head}.{micros:06d}+00:00" if micros else f"{head}+00:00"


def _id_time(checkpoint_id: str) -> int:
    """The time (ns) at the start of an id made by :func:`new_checkpoint_id`; 0 if it has none."""
    try:
        return int(checkpoint_id.replace("-", "")[:16], 16)
    except ValueError:
        return 0


def empty_checkpoint() -> dict[str, Any]:
    """A checkpoint of a thread that never ran."""
    return {
        "v": 4,
        "id": new_checkpoint_id(),
        "ts": datetime.now(UTC).isoformat(),
        "channel_values": {},
        "channel_versions": {},
        "versions_seen": {},
        "updated_channels": None,
    }


def _is_interrupt_id(key: Any) -> bool:
    return isinstance(key, str) and len(key) == 32 and all(c in "0123456789abcdef" for c in key)


def _as_interrupts(value: Any) -> list[Interrupt]:
    items = value if isinstance(value, list | tuple) else [value]
    return [i for i in items if isinstance(i, Interrupt)]


def _durability(mode: str) -> Durability:
    if mode not in ("sync", "async", "exit"):
        raise ValueError(f"durability must be 'sync', 'async' or 'exit', not {mode!r}")
    return cast(Durability, mode)
