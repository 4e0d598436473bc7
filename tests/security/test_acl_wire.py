"""Authorization over the wire, request by request, with the principal of a PLAINTEXT listener
(User:ANONYMOUS): the ACL APIs and their filters, and the checks of the data-plane, group and
transaction APIs with Kafka's error codes."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker.security.acl import (
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.records import build_batch
from tests.dataplane.test_wire import create_topic, fetch, produce
from tests.wire import WireClient, entity

METADATA, OFFSET_COMMIT, FIND_COORDINATOR, DESCRIBE_CONFIGS, INIT_PID = 3, 8, 10, 32, 22
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ME = "User:ANONYMOUS"
Op, RT = AclOperation, ResourceType
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = PermissionType.ALLOW, PermissionType.DENY


def binding(rtype: ResourceType, name: str, op: AclOperation, permission: PermissionType = ALLOW,
            *, pattern: PatternType = LITERAL, principal: str = ME, host: str = "*") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


# What the tests start from: this client may manage ACLs and nothing else.
ADMIN = [binding(RT.CLUSTER, "kafka-cluster", Op.ALTER),
         binding(RT.CLUSTER, "kafka-cluster", Op.DESCRIBE)]


@pytest.fixture
def secured(kafka_broker_factory, tmp_path: Path):
    """A broker with the StandardAuthorizer, its ACL file seeded with ``ADMIN``."""
    (tmp_path / "kafkette-acls.json").write_text(json.dumps(
        {"version": 1, "acls": [acl.to_json() for acl in ADMIN]}))
    broker = kafka_broker_factory({"log.dirs": str(tmp_path), "authorizer.class.name": STANDARD})
    with WireClient(broker.bootstrap) as w:
        yield w


def add(w: WireClient, *acls: AclBinding) -> list[Any]:
    cls = request_type(CREATE_ACLS, 3)
    resp = w.request(CREATE_ACLS, 3, creations=tuple(
        entity(cls, "creations", resource_type=a.resource_type, resource_name=a.name,
               resource_pattern_type=a.pattern_type, principal=a.principal, host=a.host,
               operation=a.operation, permission_type=a.permission) for a in acls))
    return list(resp.results)


def describe(w: WireClient, rtype: int = RT.ANY, name: str | None = None,
             pattern: int = PatternType.ANY, principal: str | None = None) -> Any:
    return w.request(DESCRIBE_ACLS, 3, resource_type_filter=rtype, resource_name_filter=name,
                     pattern_type_filter=pattern, principal_filter=principal, host_filter=None,
                     operation=Op.ANY, permission_type=PermissionType.ANY)


def described(w: WireClient, **filters: Any) -> set[tuple[str, int, int, int]]:
    resp = describe(w, **filters)
    assert resp.error_code == ErrorCode.none
    return {(r.resource_name, r.pattern_type, a.operation, a.permission_type)
            for r in resp.resources for a in r.acls}


def metadata(w: WireClient, names: list[str] | None, *, auto_create: bool = False,
             version: int = 10) -> Any:
    cls = request_type(METADATA, version)
    topics = None if names is None else tuple(entity(cls, "topics", name=n, topic_id=None)
                                              for n in names)
    return w.request(METADATA, version, topics=topics, allow_auto_topic_creation=auto_create,
                     include_cluster_authorized_operations=True,
                     include_topic_authorized_operations=True)


def commit(w: WireClient, group: str, topic: str) -> list[int]:
    cls = request_type(OFFSET_COMMIT, 8)
    topic_cls = item_type(cls, "topics")
    part = entity(topic_cls, "partitions", partition_index=0, committed_offset=0,
                  committed_leader_epoch=-1, committed_metadata="")
    resp = w.request(OFFSET_COMMIT, 8, group_id=group, generation_id_or_member_epoch=-1,
                     member_id="", group_instance_id=None,
                     topics=(make(topic_cls, name=topic, partitions=(part,)),))
    return [p.error_code for t in resp.topics for p in t.partitions]


def test_without_an_authorizer_the_acl_apis_are_disabled(kafka_broker_factory):
    broker = kafka_broker_factory()
    with WireClient(broker.bootstrap) as w:
        resp = describe(w)
        assert resp.error_code == ErrorCode.security_disabled
        assert resp.error_message == "No Authorizer is configured on the broker"
        assert [r.error_code for r in add(w, binding(RT.TOPIC, "t", Op.READ))] == [
            ErrorCode.security_disabled]
        cls = request_type(DELETE_ACLS, 3)
        deleted = w.request(DELETE_ACLS, 3, filters=(entity(
            cls, "filters", resource_type_filter=RT.ANY, resource_name_filter=None,
            pattern_type_filter=PatternType.ANY, principal_filter=None, host_filter=None,
            operation=Op.ANY, permission_type=PermissionType.ANY),))
        assert deleted.filter_results[0].error_code == ErrorCode.security_disabled
        # and nothing is checked: the all-operations bit fields of Kafka without an authorizer
        create_topic(w, "open", 1)
        md = metadata(w, ["open"])
        assert md.topics[0].topic_authorized_operations == 3576
        assert md.cluster_authorized_operations == 8096


def test_acl_admin_needs_alter_and_describe_on_the_cluster(kafka_broker_factory):
    broker = kafka_broker_factory({"authorizer.class.name": STANDARD})
    with WireClient(broker.bootstrap) as w:
        assert describe(w).error_code == ErrorCode.cluster_authorization_failed
        assert [r.error_code for r in add(w, binding(RT.TOPIC, "t", Op.READ))] == [
            ErrorCode.cluster_authorization_failed]
        # so do the SCRAM credential APIs (DESCRIBE / ALTER on the cluster)
        assert w.request(50, 0, users=None).error_code == ErrorCode.cluster_authorization_failed
        cls = request_type(51, 0)
        altered = w.request(51, 0, deletions=(entity(cls, "deletions", name="alice",
                                                     mechanism=1),), upsertions=())
        assert [(r.user, r.error_code) for r in altered.results] == [
            ("alice", ErrorCode.cluster_authorization_failed)]


def test_create_describe_delete_with_filters(secured):
    w = secured
    results = add(w, binding(RT.TOPIC, "orders", Op.READ),
                  binding(RT.TOPIC, "ord", Op.WRITE, pattern=PREFIXED),
                  binding(RT.TOPIC, "*", Op.DESCRIBE, principal="User:*"),
                  binding(RT.GROUP, "g", Op.READ, DENY),
                  binding(RT.CLUSTER, "my-cluster", Op.ALTER),
                  binding(RT.TOPIC, "", Op.READ),
                  binding(RT.TOPIC, "orders", Op.READ))  # again: a success, no second copy
    assert [(r.error_code, r.error_message) for r in results] == [
        (ErrorCode.none, None)] * 4 + [
        (ErrorCode.invalid_request, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (ErrorCode.invalid_request, "Invalid empty resource name"),
        (ErrorCode.none, None)]
    assert described(w, rtype=RT.TOPIC, name="orders", pattern=PatternType.MATCH) == {
        ("orders", LITERAL, Op.READ, ALLOW), ("ord", PREFIXED, Op.WRITE, ALLOW),
        ("*", LITERAL, Op.DESCRIBE, ALLOW)}
    assert described(w, rtype=RT.ANY, name="ord", pattern=PatternType.ANY) == {
        ("ord", PREFIXED, Op.WRITE, ALLOW)}
    assert described(w, rtype=RT.TOPIC, pattern=LITERAL, principal="User:*") == {
        ("*", LITERAL, Op.DESCRIBE, ALLOW)}
    assert len(described(w)) == 4 + len(ADMIN)
    # two filters matching the same ACL: both report it, it is deleted once
    cls = request_type(DELETE_ACLS, 3)

    def delete_filter(rtype: int, name: str | None, pattern: int) -> Any:
        return entity(cls, "filters", resource_type_filter=rtype, resource_name_filter=name,
                      pattern_type_filter=pattern, principal_filter=None, host_filter=None,
                      operation=Op.ANY, permission_type=PermissionType.ANY)

    resp = w.request(DELETE_ACLS, 3, filters=(
        delete_filter(RT.TOPIC, "orders", PatternType.MATCH),
        delete_filter(RT.TOPIC, "ord", PREFIXED),
        delete_filter(0, None, PatternType.ANY)))
    first, second, unknown = resp.filter_results
    assert {(m.resource_name, m.pattern_type) for m in first.matching_acls} == {
        ("orders", LITERAL), ("ord", PREFIXED), ("*", LITERAL)}
    assert [(m.resource_name, m.operation) for m in second.matching_acls] == [("ord", Op.WRITE)]
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.invalid_request,
                                                          "Unknown patternFilter.")
    assert described(w, rtype=RT.TOPIC) == set()
    assert described(w, rtype=RT.GROUP) == {("g", LITERAL, Op.READ, DENY)}


def test_produce_and_fetch_need_write_and_read(secured):
    w = secured
    add(w, binding(RT.TOPIC, "data", Op.CREATE), binding(RT.TOPIC, "data", Op.WRITE))
    assert create_topic(w, "data", 1).error_code == ErrorCode.none
    assert produce(w, "data", 0, build_batch([(b"k", b"v")])).error_code == ErrorCode.none
    # checked before existence: a topic it may not write gets 29, existing or not
    assert produce(w, "missing", 0, build_batch([(b"k", b"v")])).error_code == \
        ErrorCode.topic_authorization_failed
    part = fetch(w, "data", 0, 0).responses[0].partitions[0]
    assert part.error_code == ErrorCode.topic_authorization_failed
    add(w, binding(RT.TOPIC, "data", Op.READ))
    part = fetch(w, "data", 0, 0).responses[0].partitions[0]
    assert part.error_code == ErrorCode.none and part.high_watermark == 1
    add(w, binding(RT.TOPIC, "data", Op.WRITE, DENY))  # DENY beats the ALLOW
    assert produce(w, "data", 0, build_batch([(b"k", b"v")])).error_code == \
        ErrorCode.topic_authorization_failed


def test_metadata_hides_or_refuses_what_it_may_not_describe(secured):
    w = secured
    add(w, binding(RT.TOPIC, "pub", Op.ALL), binding(RT.TOPIC, "priv", Op.CREATE))
    create_topic(w, "pub", 1)
    create_topic(w, "priv", 1)
    listed = metadata(w, None)
    assert [t.name for t in listed.topics] == ["pub"]
    assert listed.topics[0].topic_authorized_operations == 3576
    assert listed.cluster_authorized_operations == (1 << Op.ALTER) | (1 << Op.DESCRIBE)
    named = {t.name: t for t in metadata(w, ["pub", "priv", "nowhere"]).topics}
    assert named["priv"].error_code == ErrorCode.topic_authorization_failed
    assert named["priv"].partitions == () and named["priv"].topic_authorized_operations == -2**31
    assert named["nowhere"].error_code == ErrorCode.topic_authorization_failed
    # auto-creation needs CREATE (here on the topic) besides DESCRIBE
    add(w, binding(RT.TOPIC, "auto-", Op.DESCRIBE, pattern=PREFIXED))
    assert metadata(w, ["auto-a"], auto_create=True).topics[0].error_code == \
        ErrorCode.topic_authorization_failed
    add(w, binding(RT.TOPIC, "auto-", Op.CREATE, pattern=PREFIXED))
    created = metadata(w, ["auto-a"], auto_create=True).topics[0]
    assert created.error_code in (ErrorCode.none, ErrorCode.leader_not_available)
    assert created.topic_authorized_operations == (1 << Op.CREATE) | (1 << Op.DESCRIBE)


def test_offset_commit_needs_read_on_group_then_topic(secured):
    w = secured
    add(w, binding(RT.TOPIC, "c", Op.CREATE))
    create_topic(w, "c", 1)
    assert commit(w, "grp", "c") == [ErrorCode.group_authorization_failed]
    add(w, binding(RT.GROUP, "grp", Op.READ))
    assert commit(w, "grp", "c") == [ErrorCode.topic_authorization_failed]
    add(w, binding(RT.TOPIC, "c", Op.READ))
    assert commit(w, "grp", "c") == [ErrorCode.none]
    found = w.request(FIND_COORDINATOR, 4, key_type=0, coordinator_keys=("grp", "other"))
    assert [c.error_code for c in found.coordinators] == [
        ErrorCode.none, ErrorCode.group_authorization_failed]


def test_init_producer_id_checks(secured):
    w = secured

    def init(transactional_id: str | None) -> ErrorCode:
        return w.request(INIT_PID, 4, transactional_id=transactional_id,
                         transaction_timeout=timedelta(seconds=60), producer_id=-1,
                         producer_epoch=-1).error_code

    assert init(None) == ErrorCode.cluster_authorization_failed
    add(w, binding(RT.TOPIC, "somewhere", Op.WRITE))  # WRITE on any topic is enough
    assert init(None) == ErrorCode.none
    assert init("tx") == ErrorCode.transactional_id_authorization_failed


def test_describe_configs_per_resource_type(secured):
    w = secured
    add(w, binding(RT.TOPIC, "cfg", Op.CREATE))
    create_topic(w, "cfg", 1)
    cls = request_type(DESCRIBE_CONFIGS, 4)
    resp = w.request(DESCRIBE_CONFIGS, 4, include_synonyms=False, include_documentation=False,
                     resources=(entity(cls, "resources", resource_type=2, resource_name="cfg",
                                       configuration_keys=None),
                                entity(cls, "resources", resource_type=4, resource_name="",
                                       configuration_keys=None)))
    assert [r.error_code for r in resp.results] == [ErrorCode.topic_authorization_failed,
                                                    ErrorCode.cluster_authorization_failed]
    add(w, binding(RT.TOPIC, "cfg", Op.ALTER_CONFIGS))  # implies DESCRIBE_CONFIGS
    resp = w.request(DESCRIBE_CONFIGS, 4, include_synonyms=False, include_documentation=False,
                     resources=(entity(cls, "resources", resource_type=2, resource_name="cfg",
                                       configuration_keys=None),))
    assert resp.results[0].error_code == ErrorCode.none and resp.results[0].configs


def test_host_of_an_acl_must_be_the_client_address(secured):
    w = secured
    add(w, binding(RT.TOPIC, "h", Op.CREATE, host="127.0.0.2"))
    assert create_topic(w, "h", 1).error_code == ErrorCode.topic_authorization_failed
    add(w, binding(RT.TOPIC, "h", Op.CREATE, host="127.0.0.1"))
    assert create_topic(w, "h", 1).error_code == ErrorCode.none


def test_super_users_and_allow_everyone(kafka_broker_factory):
    superuser = kafka_broker_factory({"authorizer.class.name": STANDARD,
                                      "super.users": "User:admin;User:ANONYMOUS"})
    with WireClient(superuser.bootstrap) as w:
        assert create_topic(w, "s", 1).error_code == ErrorCode.none
        assert describe(w).error_code == ErrorCode.none
    everyone = kafka_broker_factory({"authorizer.class.name": STANDARD,
                                     "allow.everyone.if.no.acl.found": "true"})
    with WireClient(everyone.bootstrap) as w:
        assert create_topic(w, "e", 1).error_code == ErrorCode.none
        # an ACL for someone else closes the topic to this client
        add(w, binding(RT.TOPIC, "e", Op.WRITE, principal="User:bob"))
        assert produce(w, "e", 0, build_batch([(b"k", b"v")])).error_code == \
            ErrorCode.topic_authorization_failed
        assert produce(w, "other", 0, build_batch([(b"k", b"v")])).error_code in (
            ErrorCode.none, ErrorCode.unknown_topic_or_partition)


def test_describe_and_list_groups(secured):
    w = secured
    add(w, binding(RT.GROUP, "mine", Op.READ))
    resp = w.request(15, 5, groups=("mine", "theirs"), include_authorized_operations=True)
    by_id = {g.group_id: g for g in resp.groups}
    assert by_id["mine"].error_code == ErrorCode.none
    assert by_id["mine"].authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert by_id["theirs"].error_code == ErrorCode.group_authorization_failed
    assert by_id["theirs"].authorized_operations == -2**31
    # DESCRIBE on the cluster (ADMIN has it) lists every group
    assert w.request(16, 4, states_filter=()).error_code == ErrorCode.none


def test_transactional_id_checks(secured):
    w = secured
    found = w.request(FIND_COORDINATOR, 4, key_type=1, coordinator_keys=("tx",))
    assert found.coordinators[0].error_code == ErrorCode.transactional_id_authorization_failed
    end = w.request(26, 3, transactional_id="tx", producer_id=1, producer_epoch=0,
                    committed=True)
    assert end.error_code == ErrorCode.transactional_id_authorization_failed
    add(w, binding(RT.TRANSACTIONAL_ID, "tx", Op.WRITE))  # WRITE implies DESCRIBE
    found = w.request(FIND_COORDINATOR, 4, key_type=1, coordinator_keys=("tx",))
    assert found.coordinators[0].error_code in (ErrorCode.none,
                                                ErrorCode.coordinator_not_available)
