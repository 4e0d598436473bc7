"""JoinGroup/SyncGroup answers, built per version by their handlers, equal what the generic
``make`` builds for every version kafkette serves (fields a version lacks dropped, the protocol
name as each version spells it), and encode to the same bytes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker.context import RequestContext
from kafkette.broker.handlers.groups import _join_response, _sync_response
from kafkette.coordinator.group.requests import JoinResult, SyncResult
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import codec, response_type

ZERO = timedelta(0)

JOIN_RESULTS = [
    JoinResult(0, "m1", 3, "consumer", "range", "m1",
               [("m1", None, b"md1"), ("m2", "instance-2", b"")], skip_assignment=True),
    JoinResult(0, "m2", 3, "consumer", "range", "m1", []),
    JoinResult(79, "m3"),  # MEMBER_ID_REQUIRED: no protocol, no generation
    JoinResult(25, ""),
    JoinResult(0, "m4", 1, None, "", "m4", []),
]
SYNC_RESULTS = [SyncResult(0, b"assignment", "consumer", "range"), SyncResult(27),
                SyncResult(0, b"", None, None)]


def _generic_join(version: int, res: JoinResult):
    name = res.protocol_name
    if version < 7:
        name = name or ""
    elif name == "":
        name = None
    cls = response_type(11, version)
    member_cls = item_type(cls, "members")
    return make(cls, throttle_time=ZERO, error_code=ErrorCode(res.error),
                generation_id=res.generation, protocol_type=res.protocol_type,
                protocol_name=name, leader=res.leader, skip_assignment=res.skip_assignment,
                member_id=res.member_id,
                members=tuple(make(member_cls, member_id=m, group_instance_id=i, metadata=md)
                              for m, i, md in res.members))


@pytest.mark.parametrize("version", range(10))
@pytest.mark.parametrize("res", JOIN_RESULTS)
def test_join_response_equals_the_generic_build(version, res):
    built = _join_response(RequestContext(11, version, 7, "c", "/127.0.0.1", None), res)
    expected = _generic_join(version, res)
    assert type(built) is type(expected) and built == expected
    encode = codec(11, version).encode_body
    assert encode(built) == encode(expected)


@pytest.mark.parametrize("version", range(6))
@pytest.mark.parametrize("res", SYNC_RESULTS)
def test_sync_response_equals_the_generic_build(version, res):
    built = _sync_response(RequestContext(14, version, 7, "c", "/127.0.0.1", None), res)
    expected = make(response_type(14, version), throttle_time=ZERO,
                    error_code=ErrorCode(res.error), protocol_type=res.protocol_type,
                    protocol_name=res.protocol_name, assignment=res.assignment)
    assert type(built) is type(expected) and built == expected
