"""Regex subscriptions: RE2 syntax, full-match resolution, INVALID_REGULAR_EXPRESSION."""

from __future__ import annotations

import pytest

from kafkette.coordinator.group.consumer import regex
from kafkette.coordinator.runtime.error_codes import INVALID_REGULAR_EXPRESSION, CoordinatorError

TOPICS = ["orders", "orders-eu", "orders.dlq", "payments", "__consumer_offsets", "xorders"]


def test_google_re2_is_the_engine():
    assert regex.ENGINE == "re2"


@pytest.mark.parametrize("pattern,expected", [
    ("orders", {"orders"}),  # full match, not search: xorders/orders-eu are not matched
    ("orders.*", {"orders", "orders-eu", "orders.dlq"}),
    ("orders\\..*", {"orders.dlq"}),
    ("(orders|payments)", {"orders", "payments"}),
    (".*", set(TOPICS)),  # Kafka 4.0 does not filter internal topics; the caller decides
    ("", set()),
    ("[a-z]+s", {"orders", "payments", "xorders"}),
])
def test_resolution_is_a_full_match(pattern, expected):
    assert regex.resolve_regex(pattern, TOPICS) == expected


@pytest.mark.parametrize("pattern", [
    "orders(", "[a-", "*orders",
    "(?<=x)orders",  # lookbehind: valid for Python's re, not for RE2
    "(a)\\1",  # backreference: not RE2
])
def test_invalid_patterns_raise_invalid_regular_expression(pattern):
    with pytest.raises(CoordinatorError) as err:
        regex.validate_regex(pattern)
    assert err.value.code == INVALID_REGULAR_EXPRESSION
    assert pattern in err.value.message


def test_invalid_pattern_is_not_printed_on_stderr(capfd):
    with pytest.raises(CoordinatorError):
        regex.validate_regex("bad(")
    assert "bad(" not in capfd.readouterr().err
