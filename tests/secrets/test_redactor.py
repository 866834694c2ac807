"""Spec: `Secret` never shows itself, and `SecretRedactor` finds every known secret in every form.

Forms: the value itself, base64 (standard and URL-safe, padded or not, and
inside longer base64 text at any alignment), URL-encoded (quote, quote_plus,
either case of escapes), JSON-escaped (once and twice) and repr-quoted.
Places: strings, bytes, containers, dataclasses, models, errors, a text
arriving in pieces, log records.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import logging
import pickle
import random
import re
import urllib.parse
from dataclasses import dataclass
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from flowcore.errors import NodeError
from flowcore.secrets import (
    NO_REDACTION,
    PLACEHOLDER,
    LearningRedactor,
    RedactedError,
    Redactor,
    Secret,
    SecretError,
    SecretRedactor,
    SecretUnavailableError,
    TextStreamRedactor,
    conceal_secrets,
    credential_name,
    find_secrets,
    learn,
    reveal_secrets,
    scrub,
    scrub_error,
    secret_forms,
)

KEY = "sk-live-" + "Zq9xW2vL7mN4pR8t"
AWKWARD = 'p@ss/w"o\\rd+&=?' + "x7Qk2Lm9"  # every encoder changes it


def encodings(value: str) -> dict[str, str]:
    raw = value.encode()
    return {
        "base64": base64.b64encode(raw).decode(),
        "base64 unpadded": base64.b64encode(raw).decode().rstrip("="),
        "urlsafe base64": base64.urlsafe_b64encode(raw).decode(),
        "basic auth": base64.b64encode(b"ada:" + raw).decode(),
        "base64 of a JSON document": base64.b64encode(json.dumps({"k": value}).encode()).decode(),
        "quote": urllib.parse.quote(value, safe=""),
        "quote_plus": urllib.parse.quote_plus(value),
        "lower-case escapes": re.sub(
            "%[0-9A-F]{2}", lambda m: m[0].lower(), urllib.parse.quote(value, safe="")
        ),
        "json": json.dumps(value)[1:-1],
        "json in json": json.dumps(json.dumps({"k": value})),
        "repr": repr(value),
        "hex": raw.hex(),
        "upper-case hex": raw.hex().upper(),
        "hex dump of a longer buffer": (b"\x00\x01" + raw + b"\xff").hex(),
        "base32": base64.b32encode(raw).decode(),
        "lower-case base32 unpadded": base64.b32encode(raw).decode().lower().rstrip("="),
        "base32 of a longer blob": base64.b32encode(b"seed" + raw + b"!").decode(),
    }


# ------------------------------------------------------------------- Secret
def test_a_secret_never_shows_its_value() -> None:
    key = Secret(KEY, name="OPENAI_API_KEY")

    shown = [str(key), repr(key), f"{key}", f"{key!r}", f"{key:>20}", str({"k": key}), str([key])]

    assert all(KEY not in text for text in shown)
    assert str(key) == PLACEHOLDER
    assert "OPENAI_API_KEY" in repr(key)
    assert key.reveal() == KEY


def test_a_secret_refuses_pickling_and_survives_copies_as_itself() -> None:
    key = Secret(KEY)

    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps({"key": key})
    assert copy.copy(key) is key
    assert copy.deepcopy({"k": key})["k"] is key


def test_secrets_compare_by_value_and_are_immutable() -> None:
    assert Secret(KEY, name="a") == Secret(KEY, name="b")
    assert Secret(KEY) != Secret(KEY + "x")
    assert len({Secret(KEY), Secret(KEY)}) == 1
    with pytest.raises(AttributeError):
        Secret(KEY)._value = "other"  # type: ignore[misc]


def test_a_stand_in_from_storage_says_what_is_missing_when_revealed() -> None:
    lost = Secret.unavailable("input.api_token")

    assert not lost.available
    with pytest.raises(SecretUnavailableError, match=r"input\.api_token") as raised:
        lost.reveal()
    assert raised.value.code == "secret-unavailable"
    assert "Give it to the run again" in str(raised.value)


def test_only_text_can_be_a_secret() -> None:
    with pytest.raises(SecretError, match="must be a str"):
        Secret(1234567890)  # type: ignore[arg-type]


# --------------------------------------------------------------- redacting
@pytest.mark.parametrize("secret", [KEY, AWKWARD])
def test_every_encoded_form_of_a_secret_is_redacted(secret: str) -> None:
    redactor = SecretRedactor([secret])

    for form, text in encodings(secret).items():
        cleaned = redactor.redact_text(f"before {text} after")
        leftovers = [f for f, t in encodings(secret).items() if t in cleaned]
        assert PLACEHOLDER in cleaned, form
        assert secret not in cleaned, form
        assert not leftovers, (form, leftovers, cleaned)


def test_the_forms_list_names_what_each_encoder_produces() -> None:
    forms = secret_forms(AWKWARD)

    assert AWKWARD in forms
    assert base64.b64encode(AWKWARD.encode()).decode() in forms
    assert urllib.parse.quote_plus(AWKWARD) in forms
    assert json.dumps(AWKWARD)[1:-1] in forms
    assert repr(AWKWARD)[1:-1] in forms


def test_redact_deep_copies_containers_and_turns_objects_into_plain_data() -> None:
    @dataclass
    class Call:
        url: str
        retries: int

    class Reply(BaseModel):
        text: str

    class Pair(NamedTuple):
        left: str
        right: int

    redactor = SecretRedactor([KEY])
    value = {
        "args": [f"Bearer {KEY}", (KEY, 1), {KEY}],
        KEY: "as a key",
        "call": Call(f"https://x/?k={KEY}", 2),
        "reply": Reply(text=KEY),
        "secret": Secret(KEY),
        "error": ValueError(f"bad key {KEY}"),
        "bytes": KEY.encode(),
        "pair": Pair(KEY, 3),
        "plain": [1, 2.5, None, True],
    }

    cleaned = redactor.redact(value)

    assert cleaned == {
        "args": ["Bearer [REDACTED]", ("[REDACTED]", 1), {"[REDACTED]"}],
        "[REDACTED]": "as a key",
        "call": {"url": "https://x/?k=[REDACTED]", "retries": 2},
        "reply": {"text": "[REDACTED]"},
        "secret": "[REDACTED]",
        "error": "ValueError: bad key [REDACTED]",
        "bytes": b"[REDACTED]",
        "pair": ("[REDACTED]", 3),
        "plain": [1, 2.5, None, True],
    }
    assert value["args"][0] == f"Bearer {KEY}"  # the original is untouched
    assert cleaned["plain"] is not value["plain"]  # a copy, even where nothing changed


def test_an_unknown_object_is_kept_unless_its_text_holds_a_secret() -> None:
    class Token:
        def __init__(self, text: str) -> None:
            self.text = text

        def __str__(self) -> str:
            return self.text

    redactor = SecretRedactor([KEY])
    harmless = Token("nothing here")

    assert redactor.redact(harmless) is harmless
    assert redactor.redact(Token(f"token {KEY}")) == "token [REDACTED]"


def test_short_values_are_refused_so_ordinary_text_is_not_redacted() -> None:
    with pytest.raises(SecretError, match="shorter than min_length=8") as raised:
        SecretRedactor([Secret("1234", name="PIN")])
    assert "PIN" in str(raised.value)
    assert "1234" not in str(raised.value)
    assert SecretRedactor(["1234"], min_length=4).redact("pin 1234") == "pin [REDACTED]"


def test_the_longest_form_wins_where_forms_overlap() -> None:
    redactor = SecretRedactor([AWKWARD])
    escaped = json.dumps({"password": AWKWARD})

    assert redactor.redact_text(escaped) == '{"password": "[REDACTED]"}'


def test_secrets_can_be_added_while_in_use_and_forks_keep_what_they_learn() -> None:
    redactor = SecretRedactor()
    assert redactor.redact(KEY) == KEY

    redactor.add(Secret(KEY, name="API_KEY"))
    child = redactor.fork()
    child.add(AWKWARD)

    assert redactor.redact(KEY) == PLACEHOLDER
    assert redactor.redact(AWKWARD) == AWKWARD
    assert child.redact(f"{KEY} {AWKWARD}") == f"{PLACEHOLDER} {PLACEHOLDER}"
    assert redactor.names() == ["API_KEY"]
    assert KEY not in repr(redactor)


def test_the_environment_gives_the_variables_named_like_credentials() -> None:
    env = {
        "OPENAI_API_KEY": KEY,
        "GITHUB_TOKEN": "ghp_" + "a" * 20,
        "DB_PASSWORD": "correct horse battery",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "SHORT_KEY": "1234",
        "HOME": "/home/ada-lovelace",
        "PATH": "/usr/local/bin:/usr/bin",
    }

    redactor = SecretRedactor.from_environment(env, extra=[Secret("pin-0000-1111", name="PIN")])

    assert redactor.names() == [
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "GITHUB_TOKEN",
        "OPENAI_API_KEY",
        "PIN",
    ]
    text = " ".join(env.values())
    cleaned = redactor.redact_text(text)
    assert "/home/ada-lovelace" in cleaned
    assert "1234" in cleaned
    assert KEY not in cleaned
    assert "correct horse" not in cleaned
    assert [credential_name(n) for n in ("MY_API_KEY", "x_token", "KEYRING", "TOKENIZER")] == [
        True,
        True,
        False,
        False,
    ]


def test_both_redactors_implement_the_protocols() -> None:
    for redactor in (SecretRedactor([KEY]), NO_REDACTION):
        assert isinstance(redactor, Redactor)
        assert isinstance(redactor.text_stream(), TextStreamRedactor)
    assert isinstance(SecretRedactor(), LearningRedactor)
    assert not isinstance(NO_REDACTION, LearningRedactor)
    assert NO_REDACTION.redact({"k": KEY}) == {"k": KEY}


# ----------------------------------------------------------------- streams
def test_a_secret_split_across_two_deltas_is_never_sent_in_pieces() -> None:
    stream = SecretRedactor([KEY]).text_stream()

    sent = [stream.feed("The key is " + KEY[:5]), stream.feed(KEY[5:] + " - keep it safe.")]
    sent.append(stream.flush())

    assert "".join(sent) == "The key is [REDACTED] - keep it safe."
    for piece in sent:
        assert not any(KEY[i:] in piece or KEY[:i] in piece for i in range(3, len(KEY) - 2))


def test_a_stream_holds_back_only_the_longest_form_less_one() -> None:
    redactor = SecretRedactor([KEY])
    longest = max(len(f) for f in secret_forms(KEY))
    stream = redactor.text_stream()

    out = stream.feed("x" * 100)

    assert out == "x" * (100 - (longest - 1))
    assert stream.flush() == "x" * (longest - 1)
    with pytest.raises(SecretError, match="flushed"):
        stream.feed("more")


@settings(max_examples=150, deadline=None)
@given(
    prefix=st.text(max_size=30),
    suffix=st.text(max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
    which=st.sampled_from(["raw", "base64", "quote", "json", "hex", "base32 of a longer blob"]),
)
def test_however_a_text_is_cut_the_stream_sends_what_whole_redaction_gives(
    prefix: str, suffix: str, cuts: list[int], which: str
) -> None:
    redactor = SecretRedactor([KEY, AWKWARD])
    secret = KEY if which == "raw" else encodings(AWKWARD)[which]
    text = f"{prefix}{secret}{suffix}{KEY}"
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]

    stream = redactor.text_stream()
    sent = [stream.feed(p) for p in pieces] + [stream.flush()]

    assert "".join(sent) == redactor.redact_text(text)
    assert all(KEY not in piece and AWKWARD not in piece for piece in sent)


def test_a_hex_or_base32_secret_cut_anywhere_in_a_stream_is_sent_redacted() -> None:
    redactor = SecretRedactor([KEY])
    for form in ("hex", "upper-case hex", "base32", "base32 of a longer blob"):
        encoded = encodings(KEY)[form]
        text = f"dump: {encoded} end"
        for cut in range(len(text)):
            stream = redactor.text_stream()
            sent = [stream.feed(text[:cut]), stream.feed(text[cut:]), stream.flush()]
            joined = "".join(sent)
            assert PLACEHOLDER in joined, (form, cut)
            assert all(encoded[i : i + 12] not in joined for i in range(len(encoded) - 12)), form


def test_many_small_deltas_of_a_long_answer() -> None:
    redactor = SecretRedactor([KEY])
    text = "".join(random.Random(7).choice("abc ") for _ in range(500)) + KEY + "!"
    stream = redactor.text_stream()
    sent = [stream.feed(ch) for ch in text] + [stream.flush()]

    assert "".join(sent).endswith("[REDACTED]!")
    assert KEY not in "".join(sent)


# ------------------------------------------------------- scrub and errors
def test_scrub_keeps_types_and_shares_what_it_did_not_change() -> None:
    class Note(BaseModel):
        text: str
        n: int

    @dataclass(frozen=True)
    class Pair:
        a: str
        b: tuple[str, ...]

    clean = {"list": [1, 2], "secret": Secret(KEY)}
    value = {
        "note": Note(text=f"key {KEY}", n=1),
        "pair": Pair("fine", (KEY,)),
        "clean": clean,
        "set": frozenset({KEY}),
    }

    scrubbed = scrub(value, SecretRedactor([KEY]))

    assert scrubbed["note"] == Note(text="key [REDACTED]", n=1)
    assert scrubbed["pair"] == Pair("fine", ("[REDACTED]",))
    assert scrubbed["set"] == frozenset({"[REDACTED]"})
    assert scrubbed["clean"] is clean  # nothing inside changed: shared
    assert scrubbed["clean"]["secret"].reveal() == KEY  # a Secret stays a Secret
    assert scrub(value, NO_REDACTION) is value


def test_scrub_error_rewrites_the_message_attributes_notes_and_cause_chain() -> None:
    redactor = SecretRedactor([KEY])
    try:
        try:
            raise ConnectionError(f"refused with key {KEY}")
        except ConnectionError as inner:
            raise NodeError(node="fetch", attempts=1, cause=inner) from inner
    except NodeError as caught:
        error = caught
    error.add_note(f"while using {KEY}")

    same = scrub_error(error, redactor)

    assert same is error
    assert KEY not in str(error)
    assert KEY not in repr(error)
    assert KEY not in str(error.__cause__)
    assert KEY not in str(error.cause)
    assert error.__notes__ == ["while using [REDACTED]"]
    assert "refused with key [REDACTED]" in str(error)


def test_an_error_whose_text_cannot_be_rewritten_is_replaced_by_a_stand_in() -> None:
    class Login(BaseModel):
        pin: int

    try:
        Login(pin=KEY)  # type: ignore[arg-type]
    except ValidationError as exc:
        invalid = exc
    assert KEY in str(invalid)  # pydantic shows the input value
    outer = RuntimeError("login failed")
    outer.__cause__ = invalid

    scrub_error(outer, SecretRedactor([KEY]))
    replaced = scrub_error(invalid, SecretRedactor([KEY]))

    assert isinstance(outer.__cause__, RedactedError)
    assert outer.__cause__.original_type == "ValidationError"
    assert KEY not in str(outer.__cause__)
    assert isinstance(replaced, RedactedError)
    assert KEY not in repr(replaced)


def test_reveal_conceal_find_and_learn_work_through_containers() -> None:
    value = {"token": Secret(KEY, name="token"), "list": [Secret(AWKWARD)], "n": 1}

    assert reveal_secrets(value) == {"token": KEY, "list": [AWKWARD], "n": 1}
    assert conceal_secrets(value) == {"token": PLACEHOLDER, "list": [PLACEHOLDER], "n": 1}
    assert [s.name for s in find_secrets(value)] == ["token", "secret"]
    redactor = SecretRedactor()
    assert learn(redactor, {"a": KEY, "short": "1234", "lost": Secret.unavailable("x")}) == 1
    assert redactor.redact(KEY) == PLACEHOLDER
    assert learn(NO_REDACTION, KEY) == 0


# ----------------------------------------------------------------- logging
def test_log_records_are_redacted_in_message_args_extras_and_tracebacks() -> None:
    redactor = SecretRedactor([KEY])
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(message)s|%(user_token)s"))
    handler.addFilter(redactor.logging_filter())
    log = logging.getLogger("tests.secrets.logging")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("calling with %s", KEY, extra={"user_token": KEY})
        try:
            raise PermissionError(f"denied for {base64.b64encode(KEY.encode()).decode()}")
        except PermissionError:
            log.exception("call failed", extra={"user_token": "-"})
    finally:
        log.removeHandler(handler)

    text = out.getvalue()
    assert "calling with [REDACTED]|[REDACTED]" in text
    assert "PermissionError: denied for [REDACTED]" in text
    assert KEY not in text
    assert base64.b64encode(KEY.encode()).decode() not in text
