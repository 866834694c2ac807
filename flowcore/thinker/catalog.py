"""What the offline Thinker model knows how to build: a small catalog of capabilities.

The offline model (:mod:`flowcore.thinker.offline_model`) is not a language
model: it recognises these capabilities by their trigger phrases in an
intent, in the order they appear, and answers each Thinker stage from
them. Each capability carries the block it would write (Python source or
an LLM prompt) and sample inputs to test it on. The catalog is data the
model reads; the Thinker's machinery never sees it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["CATALOG", "Capability", "find_capabilities"]


@dataclass(frozen=True, slots=True)
class Capability:
    """One block the offline model can propose and write.

    Example:
        >>> CATALOG[0].key
        'extract_numbers'
    """

    key: str
    triggers: tuple[str, ...]
    description: str
    kind: Literal["python", "llm"]
    inputs: dict[str, str]
    outputs: dict[str, str]
    sample: dict[str, Any]
    source: str | None = None
    prompt: str | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)

    def schema(self, fields: dict[str, str], *, required: bool = True) -> dict[str, Any]:
        """A JSON object schema of ``fields`` (name -> JSON type).

        Example:
            >>> CATALOG[0].schema({"text": "string"})["required"]
            ['text']
        """
        props = {name: {"type": kind} for name, kind in fields.items()}
        return {"type": "object", "properties": props, "required": list(fields) if required else []}


def _py(body: str) -> str:
    return "async def execute(inputs, context):\n" + body


CATALOG: tuple[Capability, ...] = (
    Capability(
        "extract_numbers",
        ("numbers from", "extract the numbers", "extract numbers"),
        "Extract every number written in a text as a list of numbers.",
        "python",
        {"text": "string"},
        {"numbers": "array"},
        {"text": "I paid 12.5 then 7 and 3"},
        source="import re\n\n"
        + _py(
            "    found = re.findall(r'-?\\d+(?:\\.\\d+)?', inputs['text'])\n"
            "    return {'numbers': [float(x) if '.' in x else int(x) for x in found]}\n"
        ),
        tags=("numbers", "parse"),
    ),
    Capability(
        "average_numbers",
        ("average", "mean"),
        "Compute the arithmetic mean of a list of numbers.",
        "python",
        {"numbers": "array"},
        {"mean": "number"},
        {"numbers": [1, 2, 3, 4]},
        source="import statistics\n\n"
        + _py(
            "    values = [float(v) for v in inputs['numbers']]\n"
            "    return {'mean': statistics.fmean(values) if values else 0.0}\n"
        ),
        tags=("numbers", "statistics"),
    ),
    Capability(
        "largest_number",
        ("largest", "maximum", "biggest"),
        "Find the largest number in a list of numbers.",
        "python",
        {"numbers": "array"},
        {"largest": "number"},
        {"numbers": [3, 9, 2]},
        source=_py(
            "    values = [float(v) for v in inputs['numbers']]\n"
            "    return {'largest': max(values) if values else 0.0}\n"
        ),
        tags=("numbers",),
    ),
    Capability(
        "sort_numbers",
        ("sort",),
        "Sort a list of numbers from smallest to largest.",
        "python",
        {"numbers": "array"},
        {"sorted_numbers": "array"},
        {"numbers": [3, 1, 2]},
        source=_py("    return {'sorted_numbers': sorted(float(v) for v in inputs['numbers'])}\n"),
        tags=("numbers", "sort"),
    ),
    Capability(
        "text_summary",
        ("summar",),
        "Summarize a text in a few sentences.",
        "llm",
        {"text": "string"},
        {"summary": "string"},
        {"text": "A long article about rivers."},
        prompt="Summarize this text in at most three sentences.\n\n{{ text }}",
        tags=("text", "summary"),
    ),
    Capability(
        "count_words",
        ("count the words", "word count", "count words", "how many words"),
        "Count the words in a text.",
        "python",
        {"text": "string"},
        {"word_count": "integer"},
        {"text": "one two three"},
        source=_py("    return {'word_count': len(inputs['text'].split())}\n"),
        tags=("text", "count"),
    ),
    Capability(
        "extract_emails",
        ("email",),
        "Find every email address in a text.",
        "python",
        {"text": "string"},
        {"emails": "array"},
        {"text": "write to ada@example.com today"},
        source="import re\n\n"
        + _py(
            "    return {'emails': re.findall(r'[\\w.+-]+@[\\w-]+\\.[\\w.]+', inputs['text'])}\n"
        ),
        tags=("text", "email", "parse"),
    ),
    Capability(
        "extract_keywords",
        ("keyword",),
        "List the most frequent meaningful words of a text as keywords.",
        "python",
        {"text": "string"},
        {"keywords": "array"},
        {"text": "rivers and lakes and rivers"},
        source="import collections\nimport re\n\n"
        + _py(
            "    words = [w for w in re.findall(r'[a-z]+', inputs['text'].lower()) if len(w) > 3]\n"
            "    return {'keywords': [w for w, _ in collections.Counter(words).most_common(5)]}\n"
        ),
        tags=("text", "keywords"),
    ),
    Capability(
        "slugify_text",
        ("slug",),
        "Turn a title into a URL slug of lowercase words joined by hyphens.",
        "python",
        {"text": "string"},
        {"slug": "string"},
        {"text": "Hello, World Again"},
        source="import re\n\n"
        + _py(
            "    words = re.findall(r'[a-z0-9]+', inputs['text'].lower())\n"
            "    return {'slug': '-'.join(words)}\n"
        ),
        tags=("text", "url"),
    ),
    Capability(
        "uppercase_text",
        ("uppercase", "upper case", "capital letters"),
        "Convert a text to upper case letters.",
        "python",
        {"text": "string"},
        {"upper_text": "string"},
        {"text": "quiet please"},
        source=_py("    return {'upper_text': inputs['text'].upper()}\n"),
        tags=("text",),
    ),
    Capability(
        "reverse_text",
        ("reverse",),
        "Reverse the order of the characters of a text.",
        "python",
        {"text": "string"},
        {"reversed_text": "string"},
        {"text": "abc"},
        source=_py("    return {'reversed_text': inputs['text'][::-1]}\n"),
        tags=("text",),
    ),
    Capability(
        "count_lines",
        ("lines",),
        "Count the non-empty lines of a text.",
        "python",
        {"text": "string"},
        {"line_count": "integer"},
        {"text": "a\nb\n\nc"},
        source=_py(
            "    return {'line_count': sum(1 for l in inputs['text'].splitlines() if l.strip())}\n"
        ),
        tags=("text", "count"),
    ),
    Capability(
        "extract_dates",
        ("date",),
        "Find every ISO date (YYYY-MM-DD) written in a text.",
        "python",
        {"text": "string"},
        {"dates": "array"},
        {"text": "from 2024-01-05 to 2024-02-01"},
        source="import re\n\n"
        + _py("    return {'dates': re.findall(r'\\d{4}-\\d{2}-\\d{2}', inputs['text'])}\n"),
        tags=("text", "dates", "parse"),
    ),
    Capability(
        "detect_sentiment",
        ("sentiment", "mood", "tone"),
        "Decide whether a text sounds positive, negative or neutral.",
        "llm",
        {"text": "string"},
        {"sentiment": "string"},
        {"text": "I love this product"},
        prompt="Is the tone of this text positive, negative or neutral?\n\n{{ text }}",
        tags=("text", "sentiment"),
    ),
    Capability(
        "translate_text",
        ("translat",),
        "Translate a text into French.",
        "llm",
        {"text": "string"},
        {"translation": "string"},
        {"text": "Good morning"},
        prompt="Translate this text into French.\n\n{{ text }}",
        tags=("text", "language"),
    ),
    Capability(
        "write_headline",
        ("headline", "title for"),
        "Write a short catchy headline for a text.",
        "llm",
        {"text": "string"},
        {"headline": "string"},
        {"text": "Rivers rise after rain."},
        prompt="Write a headline of at most ten words for this text.\n\n{{ text }}",
        tags=("text", "writing"),
    ),
)


def find_capabilities(intent: str) -> list[Capability]:
    """The capabilities an intent asks for, in the order its words mention them.

    Example:
        >>> [c.key for c in find_capabilities("Summarize a text, then count the words")]
        ['text_summary', 'count_words']
    """
    text = intent.lower()
    found: list[tuple[int, Capability]] = []
    for capability in CATALOG:
        places = [text.find(t) for t in capability.triggers if t in text]
        if places:
            found.append((min(places), capability))
    return [c for _, c in sorted(found, key=lambda pair: pair[0])]
