"""The forms a secret takes on its way out: encoded, escaped, embedded in other text.

A secret rarely leaks only as itself. It is base64-encoded into an
``Authorization: Basic`` header, URL-encoded into a query string,
JSON-escaped inside a stored message, ``repr``-quoted in an error,
hex-dumped by a debug log of raw bytes, base32-encoded in an OTP seed or a
DNS-safe name. These functions list every form worth looking for, so one
regular expression can find them all.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse

__all__ = ["base32_cores", "base64_cores", "credential_name", "secret_forms"]

_PERCENT = re.compile(r"%[0-9A-F]{2}")
_CREDENTIAL_SUFFIXES = ("_KEY", "_TOKEN", "_PAT")
_CREDENTIAL_PARTS = ("SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY")


def credential_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential.

    Matches ``*_KEY``, ``*_TOKEN``, ``*_PAT``, ``*SECRET*``, ``*PASSWORD*``,
    ``*PASSWD*``, ``*CREDENTIAL*`` and ``*API_KEY*``, in any case.

    Example:
        >>> [credential_name(n) for n in ("OPENAI_API_KEY", "GITHUB_TOKEN", "HOME", "KEYBOARD")]
        [True, True, False, False]
    """
    upper = name.upper()
    return upper.endswith(_CREDENTIAL_SUFFIXES) or any(p in upper for p in _CREDENTIAL_PARTS)


def base64_cores(data: bytes) -> set[str]:
    """The base64 text ``data`` shows inside *any* larger base64 blob, at each alignment.

    Encoded after ``k`` other bytes (``k`` = 0, 1, 2 modulo 3), the first and
    last characters of ``data``'s encoding mix with its neighbours' bits; the
    characters in between depend on ``data`` alone. Those middles, in the
    standard and the URL-safe alphabet, find ``data`` in ``user:secret``
    headers, in a base64-encoded JSON document, anywhere.

    Example:
        >>> sorted(base64_cores(b"correct horse"))[:1]
        ['NvcnJlY3QgaG9yc2']
    """
    cores: set[str] = set()
    for k in range(3):
        encoded = base64.b64encode(b"\0" * k + data).decode("ascii")
        start = -(-8 * k // 6)  # first character made only of data's bits
        end = 8 * (k + len(data)) // 6  # last one, exclusive
        core = encoded[start:end]
        cores.add(core)
        cores.add(core.translate(_URLSAFE))
    return cores


_URLSAFE = str.maketrans("+/", "-_")


def base32_cores(data: bytes) -> set[str]:
    """The base32 text ``data`` shows inside any larger base32 blob, at each alignment.

    Base32 turns each 5 bytes into 8 characters, so ``data`` encoded after
    ``k`` other bytes (``k`` = 0 to 4 modulo 5) shares its first and last
    characters with its neighbours; the characters in between are its own.
    Each middle is given in upper and lower case (both decode the same in
    lenient decoders).

    Example:
        >>> sorted(base32_cores(b"correct horse"))[:1]
        ['DN5ZHEZLDOQQGQ33SONS']
    """
    cores: set[str] = set()
    for k in range(5):
        encoded = base64.b32encode(b"\0" * k + data).decode("ascii")
        start = -(-8 * k // 5)  # first character made only of data's bits
        end = 8 * (k + len(data)) // 5  # last one, exclusive
        core = encoded[start:end]
        cores |= {core, core.lower()}
    return cores


def _hex_and_base32(data: bytes) -> set[str]:
    """Hex (both cases: byte-aligned, so it needs no cores) and base32, whole and inside blobs."""
    whole = base64.b32encode(data).decode("ascii")
    forms = {data.hex(), data.hex().upper(), whole, whole.lower(), whole.rstrip("=")}
    forms.add(whole.rstrip("=").lower())
    return forms | base32_cores(data)


def _json_escaped(text: str) -> set[str]:
    ascii_form = json.dumps(text)[1:-1]
    forms = {ascii_form, json.dumps(text, ensure_ascii=False)[1:-1]}
    forms.add(ascii_form.replace("/", "\\/"))  # some encoders escape slashes too
    forms.add(json.dumps(ascii_form)[1:-1])  # a JSON string inside a JSON string
    return forms


def _url_encoded(text: str) -> set[str]:
    forms = {
        urllib.parse.quote(text, safe=""),
        urllib.parse.quote(text),
        urllib.parse.quote_plus(text),
        urllib.parse.quote_plus(text, safe="/"),
    }
    # Percent-escapes may be written in lower case (%2f): same bytes to a server.
    forms |= {_PERCENT.sub(lambda m: m.group(0).lower(), f) for f in forms}
    return forms


def secret_forms(secret: str) -> set[str]:
    """Every form of ``secret`` to redact: itself, base64, base32, hex, URL-encoded, escaped.

    That is the value as is; its base64 encodings (standard and URL-safe,
    with and without padding) and the alignment-independent middles of its
    encoding inside longer base64 text (:func:`base64_cores`); its hex
    encoding in lower and upper case; its base32 encoding (with and without
    padding, upper and lower case) and the middles of it inside longer
    base32 text (:func:`base32_cores`); its URL encodings (``quote`` with
    and without ``/`` kept, ``quote_plus``, upper- and lower-case escapes);
    its JSON-escaped forms (ASCII and not, ``\\/`` escaped, and escaped twice
    for JSON inside JSON); its ``repr`` inside quotes; and the base64, hex
    and base32 forms of each of these texts.

    Example:
        >>> forms = secret_forms("p@ss/word+1")
        >>> sorted(f for f in forms if "%" in f)[:2]
        ['p%40ss%2Fword%2B1', 'p%40ss%2fword%2b1']
        >>> "cEBzcy93b3JkKzE=" in forms
        True
        >>> {"704073732f776f72642b31", "704073732F776F72642B31", "OBAHG4ZPO5XXEZBLGE"} <= forms
        True
    """
    data = secret.encode("utf-8")
    texts = {secret, repr(secret)[1:-1]} | _url_encoded(secret) | _json_escaped(secret)
    standard = base64.b64encode(data).decode("ascii")
    urlsafe = base64.urlsafe_b64encode(data).decode("ascii")
    forms = texts | {standard, urlsafe, standard.rstrip("="), urlsafe.rstrip("=")}
    # Escaped text gets base64-encoded too (a JSON body inside a base64 blob).
    for text in texts:
        encoded = text.encode("utf-8")
        forms |= base64_cores(encoded) | _hex_and_base32(encoded)
    forms.discard("")
    return forms
