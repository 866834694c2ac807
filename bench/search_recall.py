"""Block search recall: full text alone, vectors alone, and the two fused.

    python bench/search_recall.py                 # every query, the table
    python bench/search_recall.py --small 20      # the first 20 queries (and the keyword ones)
    python bench/search_recall.py --json out.json

Stores the 45 blocks of ``bench/search_set.py`` in a fresh SQLite block
store, asks each labelled query through :class:`flowcore.search.BlockSearch`
in each mode (and hybrid once more with every BM25 hit fused, to show what
the coverage gate does), and reports recall@1 and recall@5: how often the labelled
block is the first hit, or among the first five. The embedder is WordLlama
(``pip install 'flowcore[embed]'``); a mode that did not run as asked (a
silent fallback to text) fails the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.search_set import QUERIES, blocks
from flowcore.blocks import SqliteBlockStore
from flowcore.search import BlockSearch, Embedder, SearchMode, WordLlamaEmbedder

# (row, the search mode it runs, min_coverage of BM25 hits in the fusion)
RUNS: tuple[tuple[str, SearchMode, float], ...] = (
    ("text", "text", 0.5),
    ("vector", "vector", 0.5),
    ("hybrid", "hybrid", 0.5),
    ("hybrid_all_bm25", "hybrid", 0.0),
)
LABELS = {
    "text": "FTS5/BM25 alone",
    "vector": "vectors alone",
    "hybrid": "hybrid (RRF k=60)",
    "hybrid_all_bm25": "hybrid, every BM25 hit fused",
}


@dataclass
class ModeResult:
    """Recall of one mode over the queries, overall and by query kind."""

    mode: str  # the row: a mode, or a variant of one
    queries: int = 0
    at1: int = 0
    at5: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [n, @1, @5]
    modes_ran: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    def recall(self, hits: int, n: int | None = None) -> float:
        total = self.queries if n is None else n
        return hits / total if total else 0.0


async def run(
    queries: list[tuple[str, str, str]], embedder: Embedder, db_path: Path
) -> list[ModeResult]:
    """Each mode's recall over ``queries`` against a fresh store at ``db_path``."""
    results = {row: ModeResult(row) for row, _, _ in RUNS}
    async with SqliteBlockStore(db_path, seed_builtins=False) as store:
        for block in blocks():
            await store.save(block)
        searches = {
            row: BlockSearch(store, embedder, min_coverage=coverage) for row, _, coverage in RUNS
        }
        await searches["hybrid"].index()
        for query, wanted, kind in queries:
            for row, mode, _ in RUNS:
                hits = await searches[row].search(query, limit=5, mode=mode)
                ids = [h.block.id for h in hits]
                result = results[row]
                result.queries += 1
                counts = result.by_kind.setdefault(kind, [0, 0, 0])
                counts[0] += 1
                if ids[:1] == [wanted]:
                    result.at1 += 1
                    counts[1] += 1
                if wanted in ids:
                    result.at5 += 1
                    counts[2] += 1
                else:
                    result.misses.append(f"{query!r} -> {wanted} (got {ids[:3]})")
                for hit in hits:
                    if hit.mode not in result.modes_ran:
                        result.modes_ran.append(hit.mode)
    return list(results.values())


def table(results: list[ModeResult]) -> str:
    """The results as a Markdown table."""
    kinds = sorted({k for r in results for k in r.by_kind})
    head = "| search | queries | recall@1 | recall@5 |" + "".join(
        f" {k} @1 | {k} @5 |" for k in kinds
    )
    lines = [head, "|" + "---|" * (4 + 2 * len(kinds))]
    for r in results:
        row = f"| {LABELS[r.mode]} | {r.queries} | {r.recall(r.at1):.2f} | {r.recall(r.at5):.2f} |"
        for k in kinds:
            n, a1, a5 = r.by_kind.get(k, [0, 0, 0])
            row += f" {r.recall(a1, n):.2f} | {r.recall(a5, n):.2f} |"
        lines.append(row)
    return "\n".join(lines)


def select(small: int | None) -> list[tuple[str, str, str]]:
    """All queries, or the first ``small`` paraphrases plus every keyword query."""
    if small is None:
        return list(QUERIES)
    paraphrases = [q for q in QUERIES if q[2] == "paraphrase"][:small]
    return paraphrases + [q for q in QUERIES if q[2] == "keyword"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=None, help="first N paraphrase queries")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--misses", action="store_true", help="list the queries each mode missed")
    args = parser.parse_args(argv)
    queries = select(args.small)
    with tempfile.TemporaryDirectory() as tmp:
        results = asyncio.run(run(queries, WordLlamaEmbedder(), Path(tmp) / "blocks.db"))
    print(f"{len(blocks())} blocks, {len(queries)} labelled queries, embedder WordLlama 256-d")
    print(table(results))
    if args.misses:
        for r in results:
            print(f"\n{LABELS[r.mode]} missed (not in top 5):")
            for miss in r.misses:
                print("  ", miss)
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2))
    # A mode that fell back silently would make the table a lie.
    asked = {row: mode for row, mode, _ in RUNS}
    wrong = [r.mode for r in results if r.modes_ran and r.modes_ran != [asked[r.mode]]]
    if wrong:
        print(f"modes that did not run as asked: {wrong}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
