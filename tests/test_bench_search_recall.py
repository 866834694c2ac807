"""bench/search_recall.py runs each mode for real and hybrid recall is at least full text's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.search.wordllama_required import require_wordllama

BENCH = Path(__file__).resolve().parent.parent / "bench" / "search_recall.py"


def test_search_recall_bench_reports_every_mode_and_hybrid_beats_text(tmp_path: Path) -> None:
    require_wordllama()
    out = tmp_path / "recall.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--small", "15", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| search | queries | recall@1 | recall@5 |" in proc.stdout
    results = {r["mode"]: r for r in json.loads(out.read_text())}
    assert set(results) == {"text", "vector", "hybrid", "hybrid_all_bm25"}
    for row, result in results.items():
        # No silent fallback: every hit of a mode came from that mode.
        assert result["modes_ran"] == [row.removesuffix("_all_bm25")], row
        assert result["queries"] == 15 + 18  # 15 paraphrases and every keyword query
    assert results["hybrid"]["at5"] >= results["text"]["at5"]
    # Paraphrases are what embeddings are for: hybrid finds more of them than BM25.
    assert (
        results["hybrid"]["by_kind"]["paraphrase"][2] > results["text"]["by_kind"]["paraphrase"][2]
    )
