"""What the SQLite and Postgres block stores share: the JSON document format and queries.

Both stores export and import the same ``flowcore-blocks`` document with the
same checks, filter listings the same way and split a search query into the
same words; only the SQL placeholder differs (``?`` or ``%s``), so it is
passed in. Nothing here touches a database.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from typing import Any

from flowcore.blocks.definition import BlockDefinition
from flowcore.checkpoint.serde import MAX_NESTING, check_json_value
from flowcore.errors import BlockDefinitionError, SerializationError

__all__ = [
    "conflict_error",
    "definition_of",
    "export_document",
    "filter_sql",
    "parse_document",
    "query_words",
]

# Documents longer than this are decoded in a worker thread, off the event loop.
_THREAD_ABOVE = 64 * 1024


async def parse_document(text: str) -> list[BlockDefinition]:
    """The blocks of an exported document, each checked; raises :class:`BlockDefinitionError`.

    Example:
        >>> import asyncio
        >>> asyncio.run(parse_document('{"format": "flowcore-blocks", "blocks": []}'))
        []
    """
    if isinstance(text, str | bytes | bytearray) and len(text) > _THREAD_ABOVE:
        doc = await asyncio.to_thread(_decode, text)
    else:
        doc = _decode(text)
    if not isinstance(doc, dict) or doc.get("format") != "flowcore-blocks":
        raise BlockDefinitionError(
            ['document: expected {"format": "flowcore-blocks", "blocks": [...]}']
        )
    return [_block(i, data) for i, data in enumerate(_as_list(doc.get("blocks")))]


def export_document(definitions: Iterable[str]) -> str:
    """The ``flowcore-blocks`` document of stored definitions (JSON texts), in their order.

    Example:
        >>> export_document([]).splitlines()[1]
        '  "format": "flowcore-blocks",'
    """
    return json.dumps(
        {"format": "flowcore-blocks", "version": 1, "blocks": [json.loads(d) for d in definitions]},
        indent=2,
    )


def definition_of(row: Sequence[Any] | None) -> BlockDefinition | None:
    """The block in a ``(definition, ...)`` row, or None for no row.

    Example:
        >>> definition_of(None) is None
        True
    """
    return None if row is None else BlockDefinition.model_validate_json(row[0])


def conflict_error(block: BlockDefinition) -> BlockDefinitionError:
    """The error for an imported block whose id and version hold a different block.

    Example:
        >>> # raise conflict_error(block)
    """
    return BlockDefinitionError(
        [
            f"{block.id}@{block.version}: this store already has a different "
            "block under that id and version; give the changed block the next "
            "version number, or save() it, which numbers it"
        ],
        block=block.id,
    )


def query_words(query: str) -> list[str]:
    """The words of a search query: runs of letters and digits.

    Example:
        >>> query_words("shorten, long-text!")
        ['shorten', 'long', 'text']
    """
    return [w for w in "".join(c if c.isalnum() else " " for c in query).split() if w]


def filter_sql(category: str | None, tags: Sequence[str], mark: str) -> tuple[str, list[Any]]:
    """The query for latest versions with ``category`` and every tag, unordered.

    ``mark`` is the database's placeholder (``?`` or ``%s``).

    Example:
        >>> filter_sql("memory", (), "?")[1]
        ['memory']
    """
    sql = (
        "SELECT b.definition FROM blocks b WHERE b.version = "
        "(SELECT MAX(version) FROM blocks WHERE id = b.id)"
    )
    params: list[Any] = []
    if category is not None:
        sql += f" AND b.category = {mark}"
        params.append(category)
    for tag in tags:
        sql += f" AND EXISTS (SELECT 1 FROM block_tags t WHERE t.id = b.id AND t.tag = {mark})"
        params.append(tag)
    return sql, params


def _decode(text: str) -> Any:
    """The document in ``text``; anything but JSON data raises :class:`BlockDefinitionError`."""
    if not isinstance(text, str | bytes | bytearray):
        raise BlockDefinitionError(
            [f"document: expected JSON text, got a {type(text).__name__}; pass the file's text"]
        )
    try:
        return json.loads(text, parse_int=_read_int)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BlockDefinitionError([f"document: not JSON ({exc})"]) from None
    except RecursionError:
        raise BlockDefinitionError(
            [
                "document: nests lists or objects too deep to read; a block definition may "
                f"nest at most {MAX_NESTING} levels, flatten the schemas that nest deeper"
            ]
        ) from None


def _read_int(text: str) -> int:
    """``int(text)``, or for more digits than Python converts a stand-in as long.

    Python refuses such ints with a bare ``ValueError`` from inside the
    decoder, which cannot say where the int was; the stand-in (a power of two
    of about as many digits) lets :func:`check_json_value` refuse it with its
    path. It never reaches the store: ints that long are not storable.
    """
    try:
        return int(text)
    except ValueError:
        digits = len(text) - text.startswith("-")
        return 1 << max(digits * 10 // 3, 14_001)


def _block(index: int, data: Any) -> BlockDefinition:
    """Block ``index`` of a document, refused typed unless it is valid and plain JSON data."""
    block = data.get("id") if isinstance(data, dict) else None
    try:
        check_json_value(data, path=f"blocks[{index}]")
    except SerializationError as exc:
        raise BlockDefinitionError(
            [str(exc).removeprefix("cannot store ")],
            block=block if isinstance(block, str) and block.isprintable() else None,
        ) from None
    return BlockDefinition.from_data(data)


def _as_list(value: Any) -> Iterable[Any]:
    if not isinstance(value, list):
        raise BlockDefinitionError(["blocks: expected a list of block definitions"])
    return value


def _same(stored: BlockDefinition, new: BlockDefinition) -> bool:
    # The version number is the store's business, not part of the content.
    return stored.model_dump(exclude={"version"}) == new.model_dump(exclude={"version"})
