"""The admin client behind ``kafkette groups`` (broker/cli/groups_command.py): consumer-group admin over
the wire, as kafka-consumer-groups.sh's Admin calls.

A small blocking client on the project's codec, connected to one broker; API versions are
negotiated with ApiVersions. ``broker/cli/group_admin.py`` sends each call to the broker that
must answer it (a group's coordinator, a partition's leader, every broker for ListGroups).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

from .client_security import AuthError
from .wire_client import WireClient, WireError

API_VERSIONS, METADATA, LIST_OFFSETS, FIND_COORDINATOR = 18, 3, 2, 10
OFFSET_COMMIT, OFFSET_FETCH, OFFSET_DELETE = 8, 9, 47
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
CONSUMER_GROUP_DESCRIBE = 69
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31

# Version ranges this client knows the shape of; the highest one the broker also accepts is used.
OURS: dict[int, tuple[int, int]] = {
    METADATA: (1, 12), LIST_OFFSETS: (1, 7), OFFSET_COMMIT: (2, 8), OFFSET_FETCH: (1, 7),
    DESCRIBE_GROUPS: (0, 5), LIST_GROUPS: (0, 5), DELETE_GROUPS: (0, 2), OFFSET_DELETE: (0, 0),
    CONSUMER_GROUP_DESCRIBE: (0, 1), FIND_COORDINATOR: (1, 3), DESCRIBE_ACLS: (1, 3),
    CREATE_ACLS: (1, 3), DELETE_ACLS: (1, 3),
}
# An ACL on the wire (CreateAcls creation, DescribeAcls / DeleteAcls answer): resource type,
# name, pattern type, principal, host, operation, permission type (Kafka's codes).
AclRow = tuple[int, str, int, str, str, int, int]
# A DescribeAcls / DeleteAcls filter: the same with None names, principals and hosts for any.
AclFilterRow = tuple[int, str | None, int, str | None, str | None, int, int]
# A group's coordinator moved or is loading: find it again and retry.
COORDINATOR_ERRORS = frozenset({"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
                                "COORDINATOR_LOAD_IN_PROGRESS"})
EARLIEST, LATEST = -2, -1


class AdminError(Exception):
    pass


class CoordinatorMoved(AdminError):
    """The broker asked is not (yet) the group's coordinator."""


def _check(what: str, code: Any) -> None:
    if code != ErrorCode.none:
        name = error_name(code)
        raise (CoordinatorMoved if name in COORDINATOR_ERRORS else AdminError)(
            f"{what} failed: {name}")


def error_name(code: Any) -> str:
    return ErrorCode(int(code)).name.upper()


def parse_bootstrap(bootstrap: str) -> list[str]:
    """``host:port[,host:port...]`` checked as Kafka's clients do (ClientUtils)."""
    servers = [item.strip() for item in bootstrap.split(",") if item.strip()]
    if not servers:
        raise AdminError("No resolvable bootstrap urls given in bootstrap.servers")
    for server in servers:
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise AdminError(f"Invalid url in bootstrap.servers: {server}")
    return servers


class AdminClient(WireClient):
    # The APIs this client uses and the version range it knows the shape of (subclasses add).
    known_versions: Mapping[int, tuple[int, int]] = OURS

    def __init__(self, bootstrap: str, timeout: float = 15, client_id: str = "kafkette-admin",
                 security: Mapping[str, str] | None = None):
        """``security``: the ``--command-config`` properties of a TLS and/or SASL listener
        (broker/cli/client_security.py); a refused login is an AdminError with the broker's
        message."""
        errors = []
        for server in parse_bootstrap(bootstrap):  # the first one that answers, as Kafka's clients
            try:
                super().__init__(server, client_id, timeout, security)
                break
            except OSError as exc:
                errors.append(f"{server}: {exc.strerror or exc}")
            except AuthError as exc:
                raise AdminError(str(exc)) from None
        else:
            raise AdminError(f"cannot connect to {bootstrap} ({'; '.join(errors)})")
        self.versions = self._negotiate()

    def _negotiate(self) -> dict[int, int]:
        response = self._call(API_VERSIONS, 0)
        if response.error_code != ErrorCode.none:
            raise AdminError(f"ApiVersions failed: {error_name(response.error_code)}")
        theirs = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
        chosen: dict[int, int] = {}
        for key, (lo, hi) in self.known_versions.items():
            if key in theirs:
                best = min(hi, theirs[key][1])
                if best >= max(lo, theirs[key][0]):
                    chosen[key] = best
        return chosen

    def _call(self, api_key: int, version: int, **fields: Any) -> Any:
        try:
            return self.request(api_key, version, **fields)
        except (ConnectionError, WireError) as exc:
            raise AdminError(str(exc)) from exc

    def call(self, api_key: int, **fields: Any) -> tuple[int, Any]:
        version = self.versions.get(api_key)
        if version is None:
            raise AdminError(f"the broker does not support API key {api_key}")
        return version, self._call(api_key, version, **fields)

    # Operations -------------------------------------------------------------------------
    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group_id, protocol_type, state or '') of every group this broker coordinates."""
        return [(g, protocol, state) for g, protocol, state, _type in self.list_typed_groups()]

    def list_typed_groups(self) -> list[tuple[str, str, str, str]]:
        """(group_id, protocol_type, state or '', group type or '') of every group this broker
        coordinates (the type: ListGroups v5+, "classic", "consumer", "share")."""
        _, r = self.call(LIST_GROUPS, states_filter=(), types_filter=())
        _check("ListGroups", r.error_code)
        return sorted((g.group_id, g.protocol_type, getattr(g, "group_state", ""),
                       getattr(g, "group_type", "")) for g in r.groups)

    def find_coordinator(self, group: str, key_type: int = 0) -> tuple[int, str, int]:
        """(node id, host, port) of the group's coordinator (``key_type`` 1: of a
        transactional id's)."""
        version, r = self.call(FIND_COORDINATOR, key=group, key_type=key_type,
                               coordinator_keys=(group,))
        found = r.coordinators[0] if version >= 4 else r  # v4+: one entry per key asked
        _check(f"FindCoordinator {group!r}", found.error_code)
        return int(found.node_id), found.host, int(found.port)

    def brokers(self) -> dict[int, tuple[str, int]]:
        """Node id -> (host, port) of every live broker."""
        _, r = self.call(METADATA, topics=(), allow_auto_topic_creation=False,
                         include_cluster_authorized_operations=False,
                         include_topic_authorized_operations=False)
        return {int(b.node_id): (b.host, int(b.port)) for b in r.brokers}

    def leaders(self, topics: Iterable[str]) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the node id of its leader (-1: none), for existing topics."""
        version = self.versions.get(METADATA)
        wanted = sorted(set(topics))
        if version is None or not wanted:
            return {}
        topic_cls = item_type(request_type(METADATA, version), "topics")
        _, r = self.call(METADATA, topics=tuple(make(topic_cls, name=t, topic_id=None)
                                                for t in wanted),
                         allow_auto_topic_creation=False,
                         include_cluster_authorized_operations=False,
                         include_topic_authorized_operations=False)
        return {(t.name, int(p.partition_index)): int(p.leader_id) for t in r.topics
                if t.error_code == ErrorCode.none for p in t.partitions}

    def describe_group(self, group: str) -> Any:
        _, r = self.call(DESCRIBE_GROUPS, groups=(group,), include_authorized_operations=False)
        (described,) = r.groups
        _check(f"DescribeGroups {group!r}", described.error_code)
        return described

    def describe_consumer_group(self, group: str) -> Any | None:
        """ConsumerGroupDescribe (KIP-848 groups); None when the broker has no such group."""
        if CONSUMER_GROUP_DESCRIBE not in self.versions:
            return None
        _, r = self.call(CONSUMER_GROUP_DESCRIBE, group_ids=(group,),
                         include_authorized_operations=False)
        (described,) = r.groups
        if error_name(described.error_code) in COORDINATOR_ERRORS:
            _check(f"ConsumerGroupDescribe {group!r}", described.error_code)
        return described if described.error_code == ErrorCode.none else None

    def delete_groups(self, groups: Sequence[str]) -> dict[str, str]:
        """Error name ('NONE' on success) of each group."""
        _, r = self.call(DELETE_GROUPS, groups_names=tuple(groups))
        return {res.group_id: error_name(res.error_code) for res in r.results}

    def coordinator(self) -> tuple[str, int, int]:
        """(host, port, node id) of the broker, which is every group's coordinator."""
        _, r = self.call(METADATA, topics=(), allow_auto_topic_creation=False,
                         include_cluster_authorized_operations=False,
                         include_topic_authorized_operations=False)
        node = r.brokers[0]
        return node.host, int(node.port), int(node.node_id)

    def delete_offsets(self, group: str, tps: Iterable[tuple[str, int]]) -> tuple[str, dict[tuple[str, int], str]]:
        """OffsetDelete: (top-level error name, error name of each partition)."""
        req = request_type(OFFSET_DELETE, 0)
        topic_cls = item_type(req, "topics")
        part_cls = item_type(topic_cls, "partitions")
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        topics = tuple(make(topic_cls, name=t, partitions=tuple(
            make(part_cls, partition_index=p) for p in sorted(ps))) for t, ps in sorted(by_topic.items()))
        _, r = self.call(OFFSET_DELETE, group_id=group, topics=topics)
        return error_name(r.error_code), {(t.name, int(p.partition_index)): error_name(p.error_code)
                                          for t in r.topics for p in t.partitions}

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        version, r = self.call(OFFSET_FETCH, group_id=group, topics=None, require_stable=False)
        if version >= 2:
            _check(f"OffsetFetch {group!r}", r.error_code)
        return {(t.name, int(p.partition_index)): int(p.committed_offset)
                for t in r.topics for p in t.partitions
                if p.error_code == ErrorCode.none and p.committed_offset >= 0}

    def partitions(self, topics: Iterable[str]) -> dict[str, int]:
        """Partition count of each existing topic (no auto-creation)."""
        version = self.versions.get(METADATA)
        if version is None:
            return {}
        topic_cls = item_type(request_type(METADATA, version), "topics")
        wanted = tuple(make(topic_cls, name=t, topic_id=None) for t in sorted(set(topics)))
        if not wanted:
            return {}
        _, r = self.call(METADATA, topics=wanted, allow_auto_topic_creation=False,
                         include_cluster_authorized_operations=False,
                         include_topic_authorized_operations=False)
        return {t.name: len(t.partitions) for t in r.topics if t.error_code == ErrorCode.none}

    def list_offsets(self, tps: Iterable[tuple[str, int]], timestamp: int) -> dict[tuple[str, int], int]:
        version = self.versions.get(LIST_OFFSETS)
        if version is None:
            raise AdminError("the broker does not support ListOffsets")
        req = request_type(LIST_OFFSETS, version)
        topic_cls = item_type(req, "topics")
        part_cls = item_type(topic_cls, "partitions")
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        topics = tuple(
            make(topic_cls, name=t, partitions=tuple(
                make(part_cls, partition_index=p, timestamp=timestamp, current_leader_epoch=-1,
                     max_num_offsets=1) for p in sorted(ps)))
            for t, ps in sorted(by_topic.items()))
        if not topics:
            return {}
        _, r = self.call(LIST_OFFSETS, replica_id=-1, isolation_level=0, topics=topics)
        out: dict[tuple[str, int], int] = {}
        for t in r.topics:
            for p in t.partitions:
                if p.error_code != ErrorCode.none:
                    raise AdminError(f"ListOffsets {t.name}-{p.partition_index} failed: "
                                     f"{error_name(p.error_code)}")
                out[(t.name, int(p.partition_index))] = int(p.offset)
        return out

    def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], str]:
        """Commit as an admin (generation -1, no member), as kafka-consumer-groups does."""
        req = request_type(OFFSET_COMMIT, self.versions.get(OFFSET_COMMIT, 2))
        topic_cls = item_type(req, "topics")
        part_cls = item_type(topic_cls, "partitions")
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append((partition, offset))
        topics = tuple(
            make(topic_cls, name=t, partitions=tuple(
                make(part_cls, partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                     committed_metadata="", commit_timestamp=-1) for p, o in sorted(ps)))
            for t, ps in sorted(by_topic.items()))
        _, r = self.call(OFFSET_COMMIT, group_id=group, generation_id=-1,
                         generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                         retention_time=-1, topics=topics)
        return {(t.name, int(p.partition_index)): error_name(p.error_code)
                for t in r.topics for p in t.partitions}

    # ACLs ---------------------------------------------------------------------------------
    def describe_acls(self, wanted: AclFilterRow) -> list[AclRow]:
        """DescribeAcls: every ACL the filter matches (AdminError with the broker's message)."""
        rtype, name, pattern, principal, host, op, permission = wanted
        _, r = self.call(DESCRIBE_ACLS, resource_type_filter=rtype, resource_name_filter=name,
                         pattern_type_filter=pattern, principal_filter=principal,
                         host_filter=host, operation=op, permission_type=permission)
        if r.error_code != ErrorCode.none:
            raise AdminError(r.error_message or error_name(r.error_code))
        return [(int(res.resource_type), res.resource_name, int(res.pattern_type), a.principal,
                 a.host, int(a.operation), int(a.permission_type))
                for res in r.resources for a in res.acls]

    def create_acls(self, acls: Sequence[AclRow]) -> None:
        """CreateAcls; the first refusal is raised (AdminError), as Kafka's all().get()."""
        version = self.versions.get(CREATE_ACLS, 1)
        creation = item_type(request_type(CREATE_ACLS, version), "creations")
        _, r = self.call(CREATE_ACLS, creations=tuple(
            make(creation, resource_type=rtype, resource_name=name, resource_pattern_type=pattern,
                 principal=principal, host=host, operation=op, permission_type=permission)
            for rtype, name, pattern, principal, host, op, permission in acls))
        for result in r.results:
            if result.error_code != ErrorCode.none:
                raise AdminError(result.error_message or error_name(result.error_code))

    def delete_acls(self, filters: Sequence[AclFilterRow]) -> list[list[AclRow]]:
        """DeleteAcls: the ACLs each filter deleted (AdminError on the first refusal)."""
        version = self.versions.get(DELETE_ACLS, 1)
        filter_cls = item_type(request_type(DELETE_ACLS, version), "filters")
        _, r = self.call(DELETE_ACLS, filters=tuple(
            make(filter_cls, resource_type_filter=rtype, resource_name_filter=name,
                 pattern_type_filter=pattern, principal_filter=principal, host_filter=host,
                 operation=op, permission_type=permission)
            for rtype, name, pattern, principal, host, op, permission in filters))
        out = []
        for result in r.filter_results:
            if result.error_code != ErrorCode.none:
                raise AdminError(result.error_message or error_name(result.error_code))
            out.append([(int(a.resource_type), a.resource_name, int(a.pattern_type), a.principal,
                         a.host, int(a.operation), int(a.permission_type))
                        for a in result.matching_acls])
        return out
