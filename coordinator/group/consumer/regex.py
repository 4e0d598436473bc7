"""Regex subscriptions of the consumer group protocol (KIP-848 §4.11).

Clients send the pattern (RE2/J syntax); the broker validates it and resolves it against the
topic names with *full-match* semantics. google-re2 gives RE2's exact syntax (no lookaround, no
backreferences); without it, Python's ``re`` is used, which accepts a superset of RE2.

Which topics a pattern may match is the caller's choice: Kafka 4.0 resolves against every topic
of the metadata image, internal ones included, then keeps only the topics the principal of the
member whose heartbeat asked for the resolution may DESCRIBE (GroupMetadataManager's
filterTopicDescribeAuthorizedTopics). That decision is the broker's: it hands a ``TopicFilter``
in with the heartbeat; the coordinator never sees an authorizer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Protocol

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


class TopicFilter(Protocol):
    """The topic names a member may see, out of ``names``: with an authorizer, those its
    principal may DESCRIBE (asked when the regexes are resolved, so ACLs changed since the
    heartbeat count); the broker builds one per member connection."""

    def __call__(self, names: frozenset[str]) -> frozenset[str]: ...


def resolve_regexes(patterns: Iterable[str], topic_names: Iterable[str],
                    topic_filter: TopicFilter | None = None) -> dict[str, frozenset[str]]:
    """Each pattern -> the topic names it fully matches that ``topic_filter`` lets through
    (None: all). The filter is asked once, about every matched name (Kafka authorizes each
    distinct topic once and removes a denied one from every pattern). A pattern that does
    not compile resolves to nothing (it was validated when a member sent it)."""
    names = list(topic_names)
    resolved: dict[str, frozenset[str]] = {}
    for pattern in patterns:
        try:
            resolved[pattern] = resolve_regex(pattern, names)
        except CoordinatorError:
            log.error("regular expression %r does not compile; ignoring it", pattern)
            resolved[pattern] = frozenset()
    if topic_filter is None:
        return resolved
    matched = frozenset().union(*resolved.values())
    if not matched:
        return resolved
    permitted = topic_filter(matched)
    return _keep_only(resolved, permitted) if permitted != matched else resolved


def _keep_only(resolved: Mapping[str, frozenset[str]], permitted: frozenset[str]
               ) -> dict[str, frozenset[str]]:
    return {pattern: topics & permitted for pattern, topics in resolved.items()}
