"""StandardAuthorizer decisions and ACL filters (Kafka's StandardAuthorizerData / AclBindingFilter
semantics), without a broker."""

from __future__ import annotations

from kafkette.broker.security.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
    all_operations,
    validation_error,
)
from kafkette.broker.security.authorizer import StandardAuthorizer, parse_super_users

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = PermissionType.ALLOW, PermissionType.DENY
Op = AclOperation
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(name: str, op: AclOperation, permission: PermissionType = ALLOW, *,
        principal: str = ALICE, rtype: ResourceType = TOPIC, pattern: PatternType = LITERAL,
        host: str = "*") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def can(auth: StandardAuthorizer, op: AclOperation, name: str, *, principal: str = ALICE,
        rtype: ResourceType = TOPIC, host: str = HOST) -> bool:
    return auth.authorize(principal, host, op, rtype, name)


def test_no_acl_denies_by_default_and_allow_everyone_allows():
    assert not can(StandardAuthorizer(), Op.READ, "orders")
    assert can(StandardAuthorizer(allow_everyone_if_no_acl=True), Op.READ, "orders")


def test_one_acl_for_someone_else_closes_the_resource_even_with_allow_everyone():
    auth = StandardAuthorizer(allow_everyone_if_no_acl=True,
                              acls=[acl("orders", Op.READ, principal=BOB)])
    assert not can(auth, Op.READ, "orders")
    assert can(auth, Op.READ, "orders", principal=BOB)
    assert can(auth, Op.READ, "payments")  # no ACL on this one: the default


def test_literal_allow_is_for_that_name_and_operation_only():
    auth = StandardAuthorizer(acls=[acl("orders", Op.READ)])
    assert can(auth, Op.READ, "orders")
    assert not can(auth, Op.WRITE, "orders")
    assert not can(auth, Op.READ, "orders2")
    assert not can(auth, Op.READ, "orders", rtype=GROUP)
    assert not can(auth, Op.READ, "orders", principal=BOB)


def test_implied_describe_and_describe_configs_only_for_allow():
    auth = StandardAuthorizer(acls=[acl("a", Op.WRITE), acl("b", Op.ALTER_CONFIGS),
                                    acl("c", Op.DELETE), acl("d", Op.CREATE)])
    assert can(auth, Op.DESCRIBE, "a") and can(auth, Op.DESCRIBE, "c")
    assert can(auth, Op.DESCRIBE_CONFIGS, "b") and not can(auth, Op.DESCRIBE, "b")
    assert not can(auth, Op.DESCRIBE, "d")  # CREATE implies nothing
    deny = StandardAuthorizer(acls=[acl("a", Op.ALL), acl("a", Op.READ, DENY)])
    assert not can(deny, Op.READ, "a")
    assert can(deny, Op.DESCRIBE, "a")  # DENY READ does not deny DESCRIBE


def test_deny_beats_allow_whatever_the_pattern():
    auth = StandardAuthorizer(acls=[acl("orders", Op.READ),
                                    acl("ord", Op.READ, DENY, pattern=PREFIXED)])
    assert not can(auth, Op.READ, "orders")
    wildcard = StandardAuthorizer(acls=[acl("orders", Op.ALL),
                                        acl("*", Op.WRITE, DENY, principal="User:*")])
    assert can(wildcard, Op.READ, "orders")
    assert not can(wildcard, Op.WRITE, "orders")


def test_prefixed_and_wildcard_patterns():
    auth = StandardAuthorizer(acls=[acl("team-", Op.READ, pattern=PREFIXED),
                                    acl("*", Op.DESCRIBE, principal="User:*")])
    assert can(auth, Op.READ, "team-a") and can(auth, Op.READ, "team-")
    assert not can(auth, Op.READ, "team") and not can(auth, Op.READ, "other")
    assert can(auth, Op.DESCRIBE, "anything", principal=BOB)
    many = StandardAuthorizer(acls=[acl(f"p{i}-", Op.READ, pattern=PREFIXED) for i in range(50)])
    assert can(many, Op.READ, "p7-x") and not can(many, Op.READ, "p7")


def test_host_must_match_the_client_address():
    auth = StandardAuthorizer(acls=[acl("orders", Op.READ, host="10.0.0.1")])
    assert can(auth, Op.READ, "orders", host="10.0.0.1")
    assert not can(auth, Op.READ, "orders", host="10.0.0.2")


def test_super_users_are_allowed_everything_even_denied():
    users = parse_super_users("User:admin; User:CN=ops,OU=x ;")
    assert users == {"User:admin", "User:CN=ops,OU=x"}
    auth = StandardAuthorizer(users, acls=[acl("*", Op.ALL, DENY, principal="User:*")])
    assert can(auth, Op.ALTER, "kafka-cluster", principal="User:admin", rtype=CLUSTER)
    assert can(auth, Op.READ, "x", principal="User:CN=ops,OU=x")
    assert not can(auth, Op.READ, "x")


def test_authorize_by_resource_type():
    assert not StandardAuthorizer().authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)
    some = StandardAuthorizer(acls=[acl("orders", Op.WRITE)])
    assert some.authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)
    assert not some.authorize_by_resource_type(BOB, HOST, Op.WRITE, TOPIC)
    dominated = StandardAuthorizer(acls=[acl("orders", Op.WRITE),
                                         acl("or", Op.WRITE, DENY, pattern=PREFIXED)])
    assert not dominated.authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)
    wildcard_deny = StandardAuthorizer(acls=[acl("a", Op.WRITE), acl("*", Op.WRITE, DENY)])
    assert not wildcard_deny.authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)


def test_authorized_operations_bit_fields():
    assert all_operations(TOPIC) == 3576
    assert all_operations(GROUP) == 3400
    assert all_operations(CLUSTER) == 8096
    auth = StandardAuthorizer(acls=[acl("orders", Op.READ), acl("g", Op.READ, rtype=GROUP)])
    assert auth.authorized_operations(ALICE, HOST, TOPIC, "orders") == (1 << 3) | (1 << 8)
    assert auth.authorized_operations(ALICE, HOST, GROUP, "g") == (1 << 3) | (1 << 8)
    assert auth.authorized_operations(BOB, HOST, TOPIC, "orders") == 0


def test_filters_any_match_literal_prefixed():
    acls = [acl("orders", Op.READ), acl("ord", Op.WRITE, pattern=PREFIXED),
            acl("*", Op.DESCRIBE), acl("pay", Op.READ, principal=BOB)]
    auth = StandardAuthorizer(acls=acls)

    def names(f: AclFilter) -> list[tuple[str, PatternType]]:
        return sorted((a.name, a.pattern_type) for a in auth.matching(f))

    assert names(AclFilter(TOPIC, "orders", PatternType.MATCH)) == [
        ("*", LITERAL), ("ord", PREFIXED), ("orders", LITERAL)]
    assert names(AclFilter(ResourceType.ANY, "ord", PatternType.ANY)) == [("ord", PREFIXED)]
    assert names(AclFilter(TOPIC, "ord", LITERAL)) == []
    assert names(AclFilter(TOPIC, None, PREFIXED)) == [("ord", PREFIXED)]
    assert names(AclFilter(principal=BOB)) == [("pay", LITERAL)]
    assert names(AclFilter(operation=Op.WRITE, permission=ALLOW)) == [("ord", PREFIXED)]
    assert names(AclFilter(permission=DENY)) == []
    assert AclFilter(resource_type=ResourceType.UNKNOWN).unknown_part() == "Unknown patternFilter."
    assert AclFilter(operation=Op.UNKNOWN).unknown_part() == "Unknown entryFilter."


def test_validation_of_new_acls():
    assert validation_error(acl("orders", Op.READ)) is None
    assert validation_error(acl("x", Op.ALTER, rtype=CLUSTER)) == \
        "The only valid name for the CLUSTER resource is kafka-cluster"
    assert validation_error(acl("", Op.READ)) == "Invalid empty resource name"
    assert validation_error(acl("a", Op.ANY)) == "Invalid operation ANY"
    assert validation_error(acl("a", Op.READ, PermissionType.ANY)) == "Invalid permissionType ANY"
    assert validation_error(acl("a", Op.READ, pattern=PatternType.MATCH)) == \
        "Invalid patternType MATCH"
    assert validation_error(acl("a", Op.READ, principal="alice")).startswith(
        "Could not parse principal from `alice`")


def test_json_round_trip():
    one = acl("team-", Op.IDEMPOTENT_WRITE, DENY, pattern=PREFIXED, host="1.2.3.4")
    assert AclBinding.from_json(one.to_json()) == one
