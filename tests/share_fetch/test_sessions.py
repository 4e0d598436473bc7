"""Share sessions: epochs, replacement, the cache limit."""

from __future__ import annotations

import uuid

from kafkette.broker.share.sessions import (
    INVALID_SHARE_SESSION_EPOCH,
    SHARE_SESSION_NOT_FOUND,
    ShareSessionCache,
)

T = uuid.uuid4()


def test_epochs_follow_each_request():
    cache = ShareSessionCache()
    assert cache.check("g", "m", 1) == (SHARE_SESSION_NOT_FOUND, None)
    session = cache.open("g", "m")
    assert session is not None and session.next_epoch == 1
    assert cache.check("g", "m", 2) == (INVALID_SHARE_SESSION_EPOCH, None)
    assert cache.check("g", "m", 1) == (0, session)
    session.bump()
    assert cache.check("g", "m", 2) == (0, session)
    assert cache.check("g", "m", -1) == (0, session)  # closing needs no epoch
    session.next_epoch = 2**31 - 1
    session.bump()
    assert session.next_epoch == 1  # wraps past INT32_MAX to 1


def test_partitions_added_and_forgotten_in_order():
    session = ShareSessionCache().open("g", "m")
    assert session is not None
    session.add([(T, 2), (T, 0)])
    session.add([(T, 2), (T, 1)])
    session.forget([(T, 0)])
    assert list(session.partitions) == [(T, 2), (T, 1)]


def test_a_new_session_replaces_the_member_s_and_the_cache_is_bounded():
    cache = ShareSessionCache(max_sessions=2)
    first = cache.open("g", "a")
    assert cache.open("g", "b") is not None
    assert cache.open("g", "c") is None  # full: SHARE_SESSION_LIMIT_REACHED
    second = cache.open("g", "a")  # the same member again: replaces its session
    assert second is not None and second is not first and len(cache) == 2
    assert not cache.remove(first)  # an old session is no longer the member's
    assert cache.has_group("g") and cache.remove(second)
    assert cache.get("g", "a") is None
