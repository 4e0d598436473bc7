"""Server-side assignors (KIP-848 §4.8): properties over randomized groups (validity, balance,
stickiness, determinism, range co-partitioning) and scenarios from Kafka's assignor tests."""

from __future__ import annotations

import random
import uuid

import pytest

from kafkette.coordinator.group.assignor import (
    RangeAssignor,
    UniformAssignor,
    assignors_from_config,
)
from kafkette.coordinator.group.assignor.spec import (
    GroupSpec,
    MemberSubscription,
    PartitionAssignorError,
    SubscriptionType,
    TopicPartitionCounts,
    make_assignment,
)

T = [uuid.UUID(int=i + 1) for i in range(8)]
UNIFORM, RANGE = UniformAssignor(), RangeAssignor()


def group(subs, current=None, instance_ids=None):
    instance_ids = instance_ids or {}
    members = {m: MemberSubscription(frozenset(ts), instance_ids.get(m)) for m, ts in subs.items()}
    kind = (SubscriptionType.HOMOGENEOUS if len({frozenset(ts) for ts in subs.values()}) <= 1
            else SubscriptionType.HETEROGENEOUS)
    return GroupSpec(members, kind, current or {})


def pairs(assignment):
    return {(t, p) for t, ps in assignment.items() for p in ps}


def load(result):
    return {m: len(pairs(a)) for m, a in result.items()}


def check_valid(spec, counts, result):
    """Every partition of a subscribed topic is assigned exactly once, to a subscriber."""
    assert set(result) == set(spec.members)
    seen = {}
    for member_id, assignment in result.items():
        for tid, p in pairs(assignment):
            assert tid in spec.members[member_id].subscribed_topic_ids, (member_id, tid)
            assert 0 <= p < counts[tid]
            assert (tid, p) not in seen, f"{tid}/{p} given to {seen[(tid, p)]} and {member_id}"
            seen[(tid, p)] = member_id
    subscribed = {t for s in spec.members.values() for t in s.subscribed_topic_ids}
    assert set(seen) == {(t, p) for t in subscribed for p in range(counts[t])}


def check_locally_balanced(spec, result):
    """No single move of a partition to another subscriber of its topic improves balance."""
    loads = load(result)
    for member_id, assignment in result.items():
        for tid in assignment:
            for other, sub in spec.members.items():
                if tid in sub.subscribed_topic_ids:
                    assert loads[member_id] - loads[other] <= 1, (member_id, other, tid, loads)


def random_group(rng, homogeneous):
    counts = {t: rng.randint(1, 12) for t in T[:rng.randint(1, 6)]}
    topics = sorted(counts)
    members = [f"m{i:02d}-{rng.randrange(10**6)}" for i in range(rng.randint(1, 9))]
    if homogeneous:
        chosen = rng.sample(topics, rng.randint(1, len(topics)))
        subs = {m: chosen for m in members}
    else:
        subs = {m: rng.sample(topics, rng.randint(1, len(topics))) for m in members}
    return subs, counts


def assign(assignor, subs, counts, current=None, instance_ids=None):
    spec = group(subs, current, instance_ids)
    result = assignor.assign(spec, TopicPartitionCounts(counts))
    check_valid(spec, counts, result)
    return spec, result


@pytest.mark.parametrize("seed", range(60))
def test_uniform_homogeneous_valid_balanced_sticky(seed):
    rng = random.Random(seed)
    subs, counts = random_group(rng, homogeneous=True)
    _, first = assign(UNIFORM, subs, counts)
    loads = load(first)
    assert max(loads.values()) - min(loads.values()) <= 1
    # determinism and fixpoint: the same input gives the same output; a stable group stays put
    assert UNIFORM.assign(group(subs), TopicPartitionCounts(counts)) == first
    assert assign(UNIFORM, subs, counts, first)[1] == first

    # a random sequence of joins and leaves (random ids, so holdings do not follow id order):
    # on a join only partitions that go to the newcomer move, on a leave the others keep all
    topics = next(iter(subs.values()))
    current = first
    for step in range(6):
        members = dict.fromkeys(current, topics)
        if len(members) > 1 and rng.random() < 0.4:
            leaver = rng.choice(sorted(members))
            del members[leaver]
            before = {m: a for m, a in current.items() if m != leaver}
        else:
            members[f"{rng.randrange(10**6):06d}-{step}"] = topics
            before = current
        _, after = assign(UNIFORM, members, counts, before)
        loads = load(after)
        assert max(loads.values()) - min(loads.values()) <= 1
        for m, a in before.items():
            if len(members) > len(current):
                assert pairs(after[m]) <= pairs(a)
            else:
                assert pairs(a) <= pairs(after[m])
        current = after


@pytest.mark.parametrize("seed", range(60))
def test_uniform_heterogeneous_valid_balanced_sticky(seed):
    rng = random.Random(1000 + seed)
    subs, counts = random_group(rng, homogeneous=False)
    spec, first = assign(UNIFORM, subs, counts)
    check_locally_balanced(spec, first)
    assert assign(UNIFORM, subs, counts, first)[1] == first
    # a random subscription change, then a member leaving: still valid and balanced
    changed = dict(subs)
    victim = rng.choice(sorted(subs))
    changed[victim] = rng.sample(sorted(counts), rng.randint(1, len(counts)))
    spec, second = assign(UNIFORM, changed, counts, first)
    check_locally_balanced(spec, second)
    # members whose topics are untouched by the change and lightly loaded keep what they had
    if len(changed) > 1:
        del changed[victim]
        current = {m: a for m, a in second.items() if m != victim}
        spec, third = assign(UNIFORM, changed, counts, current)
        check_locally_balanced(spec, third)
        moved = sum(len(pairs(current[m]) - pairs(third[m])) for m in changed)
        assert moved <= len(pairs(second[victim])), "only the leaver's share may move"


@pytest.mark.parametrize("seed", range(40))
def test_range_valid_and_copartitioned(seed):
    rng = random.Random(2000 + seed)
    homogeneous = seed % 2 == 0
    subs, counts = random_group(rng, homogeneous)
    spec, result = assign(RANGE, subs, counts)
    assert RANGE.assign(spec, TopicPartitionCounts(counts)) == result
    for t1 in counts:
        for t2 in counts:
            same_subscribers = all((t1 in s) == (t2 in s) for s in subs.values())
            if t1 < t2 and counts[t1] == counts[t2] and same_subscribers:
                for a in result.values():
                    assert a.get(t1, frozenset()) == a.get(t2, frozenset())
    # per topic the subscribers' shares differ by at most one and are consecutive ranges
    for tid in counts:
        shares = [sorted(a.get(tid, ())) for m, a in result.items() if tid in subs[m]]
        if not shares:
            continue
        sizes = [len(s) for s in shares]
        assert max(sizes) - min(sizes) <= 1
        for share in filter(None, shares):
            assert share == list(range(share[0], share[0] + len(share)))


# -- scenarios of Kafka's OptimizedUniformAssignmentBuilderTest / heterogeneous / RangeAssignorTest


@pytest.mark.parametrize("assignor", [UNIFORM, RANGE])
def test_no_members_and_no_subscription(assignor):
    assert assignor.assign(group({}), TopicPartitionCounts({T[0]: 3})) == {}
    assert assignor.assign(group({"a": []}), TopicPartitionCounts({T[0]: 3})) == {"a": {}}
    assert assignor.assign(group({"a": [], "b": []}), TopicPartitionCounts({})) == {"a": {}, "b": {}}


@pytest.mark.parametrize("assignor", [UNIFORM, RANGE])
@pytest.mark.parametrize("subs", [{"a": [T[0]]}, {"a": [T[0]], "b": [T[1]]}])
def test_missing_topic_is_an_assignor_error(assignor, subs):
    with pytest.raises(PartitionAssignorError):
        assignor.assign(group(subs), TopicPartitionCounts({T[1]: 2} if len(subs) == 1 else {}))


def test_uniform_first_assignment_splits_3_and_2():
    counts = {T[0]: 3, T[1]: 2}
    _, result = assign(UNIFORM, {"a": [T[0], T[1]], "b": [T[0], T[1]]}, counts)
    assert sorted(load(result).values()) == [2, 3]


@pytest.mark.parametrize("assignor", [UNIFORM, RANGE])
def test_more_members_than_partitions(assignor):
    members = {f"m{i}": [T[0], T[1]] for i in range(5)}
    _, result = assign(assignor, members, {T[0]: 2, T[1]: 1})
    assert sorted(load(result).values()) == ([0, 0, 1, 1, 1] if assignor is UNIFORM
                                             else [0, 0, 0, 1, 2])


def test_uniform_rebalances_an_unbalanced_previous_assignment_with_minimal_moves():
    counts = {T[0]: 3, T[1]: 3}
    current = {"a": make_assignment({T[0]: [0, 1, 2], T[1]: [0, 1]}), "b": make_assignment({T[1]: [2]})}
    _, result = assign(UNIFORM, {"a": [T[0], T[1]], "b": [T[0], T[1]]}, counts, current)
    assert load(result) == {"a": 3, "b": 3}
    assert pairs(result["a"]) <= pairs(current["a"]) and pairs(current["b"]) <= pairs(result["b"])


def test_uniform_partitions_added_keep_old_ones_and_spread_new():
    subs = {"a": [T[0], T[1]], "b": [T[0], T[1]]}
    _, before = assign(UNIFORM, subs, {T[0]: 3, T[1]: 3})
    _, after = assign(UNIFORM, subs, {T[0]: 5, T[1]: 5}, before)
    assert load(after) == {"a": 5, "b": 5}
    for m in subs:
        assert pairs(before[m]) <= pairs(after[m])


def test_uniform_topic_unsubscribed_by_everybody_disappears_rest_stays():
    counts = {T[0]: 4, T[1]: 4}
    both = {"a": [T[0], T[1]], "b": [T[0], T[1]]}
    before = {"a": make_assignment({T[0]: [0, 1], T[1]: [0, 1]}),
              "b": make_assignment({T[0]: [2, 3], T[1]: [2, 3]})}
    _, after = assign(UNIFORM, {"a": [T[0]], "b": [T[0]]}, counts, before)
    assert all(T[1] not in a for a in after.values())
    for m in both:
        assert {tp for tp in pairs(before[m]) if tp[0] == T[0]} <= pairs(after[m])


def test_uniform_heterogeneous_first_assignment_and_topic_running_out():
    counts = {T[0]: 3, T[1]: 3}
    _, result = assign(UNIFORM, {"a": [T[0]], "b": [T[0], T[1]], "c": [T[1]]}, counts)
    assert load(result) == {"a": 2, "b": 2, "c": 2}
    # one member without any subscription, and a topic with fewer partitions than subscribers
    _, result = assign(UNIFORM, {"a": [T[0]], "b": [T[0]], "c": [T[0]], "d": []}, {T[0]: 2})
    assert result["d"] == {} and sorted(load(result).values()) == [0, 0, 1, 1]


def test_range_first_assignment_same_subscriptions_is_copartitioned():
    counts = {T[0]: 3, T[1]: 3}
    _, result = assign(RANGE, {"b": [T[0], T[1]], "a": [T[0], T[1]]}, counts)
    assert result == {"a": make_assignment({T[0]: [0, 1], T[1]: [0, 1]}),
                      "b": make_assignment({T[0]: [2], T[1]: [2]})}


def test_range_static_members_first_by_instance_id():
    counts = {T[0]: 4}
    subs = {"a": [T[0]], "b": [T[0]], "c": [T[0]], "d": [T[0]]}
    _, result = assign(RANGE, subs, counts, instance_ids={"d": "i-1", "b": "i-2"})
    owner = {p: m for m, a in result.items() for p in a.get(T[0], ())}
    assert owner == {0: "d", 1: "b", 2: "a", 3: "c"}


def test_range_three_members_three_topics_different_subscriptions():
    counts = {T[0]: 3, T[1]: 3, T[2]: 2}
    subs = {"a": [T[0], T[1]], "b": [T[2]], "c": [T[1], T[2]]}
    _, result = assign(RANGE, subs, counts)
    assert result == {"a": make_assignment({T[0]: [0, 1, 2], T[1]: [0, 1]}),
                      "b": make_assignment({T[2]: [0]}),
                      "c": make_assignment({T[1]: [2], T[2]: [1]})}


def test_assignors_from_config():
    assert [a.name for a in assignors_from_config("uniform,range")] == ["uniform", "range"]
    kafka = ("org.apache.kafka.coordinator.group.assignor.RangeAssignor,"
             "org.apache.kafka.coordinator.group.assignor.UniformAssignor")
    assert [a.name for a in assignors_from_config(kafka)] == ["range", "uniform"]
    with pytest.raises(ValueError):
        assignors_from_config("sticky")
    with pytest.raises(ValueError):
        assignors_from_config(" , ")


def test_uniform_extra_slots_go_to_members_holding_more():
    # 7 partitions held 1/2/2/2; a fifth member joins: quotas 2,2,1,1,1. Handing the two extra
    # slots out in id order would move a partition from c or d to a; by holdings only the
    # newcomer gains.
    counts = {T[0]: 7}
    current = {"a": make_assignment({T[0]: [0]}), "b": make_assignment({T[0]: [1, 2]}),
               "c": make_assignment({T[0]: [3, 4]}), "d": make_assignment({T[0]: [5, 6]})}
    subs = dict.fromkeys("abcde", [T[0]])
    _, result = assign(UNIFORM, subs, counts, current)
    assert sorted(load(result).values()) == [1, 1, 1, 2, 2]
    for m in current:
        assert pairs(result[m]) <= pairs(current[m])
    assert len(pairs(result["e"])) == 1


def test_uniform_heterogeneous_member_and_partitions_added_at_once():
    subs = {"a": [T[0], T[1]], "b": [T[1], T[2]]}
    counts = {T[0]: 3, T[1]: 3, T[2]: 3}
    spec, before = assign(UNIFORM, subs, counts)
    check_locally_balanced(spec, before)
    grown = {T[0]: 4, T[1]: 5, T[2]: 3}
    spec, after = assign(UNIFORM, dict(subs, c=[T[0], T[2]]), grown, before)
    check_locally_balanced(spec, after)
    assert sorted(load(after).values()) == [4, 4, 4]


def test_uniform_heterogeneous_subscription_removed_keeps_the_rest():
    subs = {"a": [T[0], T[1]], "b": [T[0], T[1]], "c": [T[1]]}
    counts = {T[0]: 4, T[1]: 4}
    _, before = assign(UNIFORM, subs, counts)
    spec, after = assign(UNIFORM, dict(subs, a=[T[1]]), counts, before)
    check_locally_balanced(spec, after)
    assert T[0] not in after["a"]
    assert {tp for tp in pairs(before["b"]) if tp[0] == T[0]} <= pairs(after["b"])


def test_uniform_heterogeneous_more_members_than_partitions():
    subs = {f"m{i}": [T[i % 2]] for i in range(6)}
    spec, result = assign(UNIFORM, subs, {T[0]: 1, T[1]: 2})
    check_locally_balanced(spec, result)
    assert sorted(load(result).values()) == [0, 0, 0, 1, 1, 1]


def test_range_member_removed_and_partition_added():
    counts = {T[0]: 4}
    _, before = assign(RANGE, {"a": [T[0]], "b": [T[0]]}, counts)
    assert before == {"a": make_assignment({T[0]: [0, 1]}), "b": make_assignment({T[0]: [2, 3]})}
    _, after = assign(RANGE, {"b": [T[0]]}, {T[0]: 5}, before)
    assert after == {"b": make_assignment({T[0]: range(5)})}
