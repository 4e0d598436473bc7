"""Member state machine (KIP-848 §4.6): the scenarios of Kafka's CurrentAssignmentBuilderTest."""

from __future__ import annotations

import uuid

import pytest

from kafkette.coordinator.group.consumer.member import (
    ConsumerGroupMember,
    MemberState,
    make_assignment,
)
from kafkette.coordinator.group.consumer.reconcile import reconcile
from kafkette.coordinator.runtime.error_codes import FENCED_MEMBER_EPOCH, CoordinatorError

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
STABLE, UNREVOKED, UNRELEASED, UNKNOWN = (MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS,
                                          MemberState.UNRELEASED_PARTITIONS, MemberState.UNKNOWN)


def a(p1=(), p2=()):
    return make_assignment({T1: p1, T2: p2})


def member(state, epoch, previous, assigned, pending=None):
    return ConsumerGroupMember("member", member_epoch=epoch, previous_member_epoch=previous,
                               state=state, assigned_partitions=assigned,
                               partitions_pending_revocation=pending or {})


def owned_by_nobody(_tid, _p):
    return -1


def owned_by_epoch(epoch):
    return lambda _tid, _p: epoch


# (name, member before, target epoch, target, partition epoch, owned, member after)
SCENARIOS = [
    ("stable_to_stable", member(STABLE, 10, 10, a((1, 2, 3), (4, 5, 6))),
     11, a((1, 2, 3), (4, 5, 6)), owned_by_epoch(10), None,
     member(STABLE, 11, 10, a((1, 2, 3), (4, 5, 6)))),
    ("stable_to_stable_with_new_partitions", member(STABLE, 10, 10, a((1, 2, 3), (4, 5, 6))),
     11, a((1, 2, 3, 4), (4, 5, 6, 7)), owned_by_nobody, None,
     member(STABLE, 11, 10, a((1, 2, 3, 4), (4, 5, 6, 7)))),
    ("stable_to_unrevoked", member(STABLE, 10, 10, a((1, 2, 3), (4, 5, 6))),
     11, a((2, 3, 4), (5, 6, 7)), owned_by_nobody, None,
     member(UNREVOKED, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)))),
    ("stable_to_unreleased", member(STABLE, 10, 10, a((1, 2, 3), (4, 5, 6))),
     11, a((1, 2, 3, 4), (4, 5, 6, 7)), owned_by_epoch(10), None,
     member(UNRELEASED, 11, 10, a((1, 2, 3), (4, 5, 6)))),
    ("stable_to_unreleased_owned_without_revoked", member(STABLE, 10, 10, a((1, 2, 3), (4, 5, 6))),
     11, a((1, 2, 3), (4, 5, 7)), lambda tid, _p: 10 if tid == T2 else -1, {},
     member(UNRELEASED, 11, 10, a((1, 2, 3), (4, 5)))),
    ("unrevoked_to_stable", member(UNREVOKED, 10, 10, a((2, 3), (5, 6)), a((1,), (4,))),
     11, a((2, 3), (5, 6)), owned_by_nobody, a((2, 3), (5, 6)),
     member(STABLE, 11, 10, a((2, 3), (5, 6)))),
    ("unrevoked_to_unrevoked", member(UNREVOKED, 10, 10, a((2, 3), (5, 6)), a((1,), (4,))),
     12, a((3,), (6,)), owned_by_nobody, a((2, 3), (5, 6)),
     member(UNREVOKED, 11, 10, a((3,), (6,)), a((2,), (5,)))),
    ("unrevoked_to_unreleased", member(UNREVOKED, 11, 10, a((2, 3), (5, 6))),
     11, a((2, 3, 4), (5, 6, 7)), owned_by_epoch(10), a((2, 3), (5, 6)),
     member(UNRELEASED, 11, 11, a((2, 3), (5, 6)))),
    ("unreleased_to_stable", member(UNRELEASED, 11, 11, a((2, 3), (5, 6))),
     12, a((2, 3), (5, 6)), owned_by_epoch(10), None,
     member(STABLE, 12, 11, a((2, 3), (5, 6)))),
    ("unreleased_to_stable_with_new_partitions", member(UNRELEASED, 11, 11, a((2, 3), (5, 6))),
     11, a((2, 3, 4), (5, 6, 7)), owned_by_nobody, None,
     member(STABLE, 11, 11, a((2, 3, 4), (5, 6, 7)))),
    ("unreleased_stays_unreleased", member(UNRELEASED, 11, 11, a((2, 3), (5, 6))),
     11, a((2, 3, 4), (5, 6, 7)), owned_by_epoch(10), None,
     member(UNRELEASED, 11, 11, a((2, 3), (5, 6)))),
    ("unreleased_to_unrevoked", member(UNRELEASED, 11, 11, a((2, 3), (5, 6))),
     12, a((3,), (6,)), owned_by_epoch(10), None,
     member(UNREVOKED, 11, 11, a((3,), (6,)), a((2,), (5,)))),
    ("unknown_rejoins_without_partitions", member(UNKNOWN, 11, 11, a((3,), (6,)), a((2,), (5,))),
     12, a((3,), (6,)), owned_by_epoch(11), {},
     member(STABLE, 12, 11, a((3,), (6,)))),
]


@pytest.mark.parametrize("before,target_epoch,target,epochs,owned,after",
                         [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_transition(before, target_epoch, target, epochs, owned, after):
    assert reconcile(before, target_epoch, target, epochs, owned) == after


def test_stable_at_target_epoch_is_returned_as_is():
    m = member(STABLE, 10, 9, a((1,)))
    assert reconcile(m, 10, a((2,)), owned_by_nobody, None) is m


@pytest.mark.parametrize("owned", [None, a((1, 2, 3), (5, 6)), a((2, 3), (4, 5, 6))])
def test_stays_unrevoked_while_revoked_partitions_are_owned_or_unreported(owned):
    m = member(UNREVOKED, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)))
    assert reconcile(m, 12, a((3,), (6,)), owned_by_nobody, owned) is m


@pytest.mark.parametrize("owned", [None, a((3,))])
def test_unknown_state_owning_partitions_is_fenced(owned):
    m = member(UNKNOWN, 11, 11, a((3,), (6,)), a((2,), (5,)))
    with pytest.raises(CoordinatorError) as err:
        reconcile(m, 12, a((3,), (6,)), owned_by_epoch(10), owned)
    assert err.value.code == FENCED_MEMBER_EPOCH


def test_new_member_never_gets_a_partition_another_member_owns():
    joiner = ConsumerGroupMember("new", member_epoch=0)
    owner_epoch = {(T1, 0): 5, (T1, 1): -1}
    after = reconcile(joiner, 6, a((0, 1)), lambda t, p: owner_epoch[(t, p)], {})
    assert after.assigned_partitions == a((1,))
    assert after.state == UNRELEASED and after.member_epoch == 6
    # the owner releases partition 0: the next heartbeat hands it over
    again = reconcile(after, 6, a((0, 1)), owned_by_nobody, a((1,)))
    assert again.assigned_partitions == a((0, 1)) and again.state == STABLE
