"""Which member's topic filter a group's regex resolution uses (Kafka: one refresh at a time,
run in the context of the member whose heartbeat scheduled it): the shard alone, on a fake
context and a ManualClock."""

from __future__ import annotations

import uuid

import pytest

from kafkette.coordinator.group.consumer.heartbeat import HeartbeatRequest
from kafkette.coordinator.group.consumer.topic_view import TopicView
from kafkette.coordinator.group.group_config import CoordinatorConfig
from kafkette.coordinator.group.group_shard import GroupCoordinatorShard
from kafkette.coordinator.runtime.clock import ManualClock

from .test_shard_unit import FakeContext, _apply

REGEX = "orders-.*"


class Refusing:
    """A member's topic filter: refuses ``denied``; counts its calls."""

    def __init__(self, *denied: str) -> None:
        self.denied = frozenset(denied)
        self.calls = 0

    def __call__(self, names: frozenset[str]) -> frozenset[str]:
        self.calls += 1
        return names - self.denied


@pytest.fixture
def topics() -> dict[str, tuple[uuid.UUID, int]]:
    return {"orders-eu": (uuid.UUID(int=1), 2), "orders-us": (uuid.UUID(int=2), 2)}


@pytest.fixture
def shard(topics):
    view = TopicView(lookup=topics.get, names=lambda: list(topics))
    view.changed()
    ctx = FakeContext(ManualClock())
    ctx.shard = GroupCoordinatorShard(0, ctx, CoordinatorConfig(topics=view))
    ctx.shard.on_loaded()
    yield ctx.shard
    ctx.close()


def beat(shard: GroupCoordinatorShard, member: str, epoch: int, topic_filter: Refusing,
         **fields) -> object:
    request = HeartbeatRequest("g", member, epoch, topic_filter=topic_filter, **fields)
    result = shard.consumer_group_heartbeat(request)
    _apply(shard, result)
    return result.response


def resolved(shard: GroupCoordinatorShard) -> frozenset[str]:
    return shard.consumer_manager().groups["g"].resolved_regexes[REGEX].topics


def test_the_pending_refresh_resolves_with_the_filter_of_the_member_that_asked_first(shard,
                                                                                     topics):
    alice, bob = Refusing("orders-us"), Refusing()
    joined = dict(rebalance_timeout_ms=5000, owned={}, subscribed_topic_regex=REGEX)
    assert beat(shard, "A", 0, alice, **joined).regex_refresh_needed
    # bob joins before the refresh ran: it asks for one too, the pending one stands
    assert beat(shard, "B", 0, bob, **joined).regex_refresh_needed
    clock = shard.context.clock  # type: ignore[attr-defined]
    clock.advance(0)
    assert resolved(shard) == {"orders-eu"}
    assert (alice.calls, bob.calls) == (1, 0)

    # a topic created later: the next refresh is asked for by bob's heartbeat, with his filter
    topics["orders-fr"] = (uuid.UUID(int=3), 1)
    shard.config.topics.changed()
    member_b = shard.consumer_manager().groups["g"].members["B"]
    assert beat(shard, "B", member_b.member_epoch, bob).regex_refresh_needed
    clock.advance(10_000)  # the refresh is throttled to one per 10 s
    assert resolved(shard) == {"orders-eu", "orders-us", "orders-fr"}
    assert (alice.calls, bob.calls) == (1, 1)
