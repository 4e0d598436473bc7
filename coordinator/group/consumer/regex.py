"""Regex subscriptions of the consumer group protocol (KIP-848 §4.11).

Clients send the pattern (RE2/J syntax); the broker validates it and resolves it against the
topic names with *full-match* semantics. google-re2 gives RE2's exact syntax (no lookaround, no
backreferences); without it, Python's ``re`` is used, which accepts a superset of RE2.

Which topics a pattern may match is the caller's choice: Kafka 4.0 resolves against every topic
of the metadata image, internal ones included.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import lru_cache

from kafkette.coordinator.runtime.error_codes import INVALID_REGULAR_EXPRESSION, CoordinatorError

log = logging.getLogger(__name__)

try:
    import re2 as _re2
except ImportError:  # pragma: no cover - google-re2 is a declared dependency
    _re2 = None
    import re as _re

    log.warning("google-re2 is not installed: regex subscriptions use Python's re")

ENGINE = "re2" if _re2 is not None else "re"


def _compile_re2(pattern: str) -> Callable[[str], bool]:
    options = _re2.Options()
    options.log_errors = False  # RE2 would print every bad client pattern on stderr
    try:
        compiled = _re2.compile(pattern, options=options)
    except _re2.error as exc:
        message = exc.args[0] if exc.args else exc
        if isinstance(message, bytes):
            message = message.decode(errors="replace")
        raise ValueError(str(message)) from None
    return lambda name: compiled.fullmatch(name) is not None


def _compile_re(pattern: str) -> Callable[[str], bool]:
    try:
        compiled = _re.compile(pattern)
    except _re.error as exc:
        raise ValueError(str(exc)) from None
    return lambda name: compiled.fullmatch(name) is not None


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Callable[[str], bool]:
    """A full-match predicate for ``pattern``; CoordinatorError INVALID_REGULAR_EXPRESSION
    when it does not compile."""
    try:
        return (_compile_re2 if _re2 is not None else _compile_re)(pattern)
    except ValueError as exc:
        raise CoordinatorError(
            INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {exc}.",
        ) from None


def validate_regex(pattern: str) -> None:
    compile_regex(pattern)


def resolve_regex(pattern: str, topic_names: Iterable[str]) -> frozenset[str]:
    """The topic names that ``pattern`` fully matches."""
    matches = compile_regex(pattern)
    return frozenset(name for name in topic_names if matches(name))
