"""The redaction seam of the port: what an executor needs from a secrets redactor.

The port applies a :class:`Redactor` to every field of an event that carries
data (tool arguments and results, interrupt values, error messages, the
final output) and runs the text deltas of one model call through one
:class:`TextStreamRedactor`, so a secret split across two deltas never leaves
in pieces. :data:`NO_REDACTION` is the identity, used when nothing is
configured; :class:`flowcore.secrets.SecretRedactor` is the real one. The
protocols themselves live in :mod:`flowcore.secrets`; they are re-exported
here because they are part of the port's contract.

Example:
    >>> NO_REDACTION.redact({"args": {"q": "ducks"}})
    {'args': {'q': 'ducks'}}
"""

from flowcore.secrets._protocol import NO_REDACTION, Redactor, TextStreamRedactor

__all__ = ["NO_REDACTION", "Redactor", "TextStreamRedactor"]
