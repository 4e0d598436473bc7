"""A small blocking Kafka client on the project's codec, with request pipelining.

Used by the benchmarks to set up state (topics, groups) and by the load generators. Request
versions are negotiated against what the target advertises in ApiVersions.
"""

from __future__ import annotations

from typing import Any

from kafkette.broker.cli.wire_client import WireClient as BaseWireClient
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

# API keys used by the benchmarks.
PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 2, 3, 8, 9
FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 10, 11, 12, 13, 14
API_VERSIONS, CREATE_TOPICS = 18, 19
CONSUMER_GROUP_HEARTBEAT = 68
API_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
             9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
             13: "LeaveGroup", 14: "SyncGroup", 18: "ApiVersions", 19: "CreateTopics",
             68: "ConsumerGroupHeartbeat"}

# Versions the benchmarks speak when the target allows (all accepted by Apache Kafka 4.x).
PREFERRED = {PRODUCE: 7, FETCH: 11, LIST_OFFSETS: 5, METADATA: 7, OFFSET_COMMIT: 7, OFFSET_FETCH: 7,
             FIND_COORDINATOR: 2, JOIN_GROUP: 5, HEARTBEAT: 3, LEAVE_GROUP: 3, SYNC_GROUP: 3,
             CREATE_TOPICS: 7}


class Unsupported(RuntimeError):
    """The target does not offer an API (or a usable version of it)."""


class KafkaError(RuntimeError):
    pass


def pick_version(versions: dict[int, tuple[int, int]], api_key: int) -> int:
    if api_key not in versions:
        raise Unsupported(f"no {API_NAMES.get(api_key, api_key)} (API {api_key}) in ApiVersions")
    low, high = versions[api_key]
    want = min(PREFERRED.get(api_key, high), high)
    if want < low:
        raise Unsupported(f"{API_NAMES.get(api_key)} v{low}-{high} has no version the bench speaks")
    return want


class WireClient(BaseWireClient):
    """The shared raw client plus ApiVersions negotiation and topic set-up."""

    def __init__(self, bootstrap: str, timeout: float = 30, client_id: str = "kafkette-bench"):
        super().__init__(bootstrap, client_id, timeout)
        self.versions: dict[int, tuple[int, int]] = {}

    def version(self, api_key: int) -> int:
        if not self.versions:
            self.versions = supported_versions(self)
        return pick_version(self.versions, api_key)

    def request(self, api_key: int, version: int | None = None, body: Any = None,
                **fields: Any) -> Any:
        version = self.version(api_key) if version is None else version
        return super().request(api_key, version, body, **fields)

    # Helpers -----------------------------------------------------------------------------------
    def metadata(self, topics: list[str] | None, auto_create: bool = False) -> Any:
        version = self.version(METADATA)
        req = request_type(METADATA, version)
        topic_cls = item_type(req, "topics")
        fields: dict[str, Any] = {"topics": None if topics is None else
                                  tuple(make(topic_cls, name=t) for t in topics)}
        if version >= 4:
            fields["allow_auto_topic_creation"] = auto_create
        return self.request(METADATA, version, **fields)

    def create_topic(self, name: str, partitions: int) -> None:
        """CreateTopics when offered, else Metadata auto-creation (one partition only)."""
        if CREATE_TOPICS in (self.versions or supported_versions(self)):
            version = self.version(CREATE_TOPICS)
            req = request_type(CREATE_TOPICS, version)
            topic_cls = item_type(req, "topics")
            topic = make(topic_cls, name=name, num_partitions=partitions, replication_factor=1,
                         assignments=(), configs=())
            resp = self.request(CREATE_TOPICS, version, topics=(topic,), timeout=30000,
                                validate_only=False)
            code = resp.topics[0].error_code
            if int(code) not in (0, 36):  # 36 = TOPIC_ALREADY_EXISTS
                raise KafkaError(f"CreateTopics {name}: {code!r}")
        elif partitions == 1:
            self.metadata([name], auto_create=True)
        else:
            raise Unsupported("no CreateTopics (API 19) to create a multi-partition topic")
        self.wait_topic(name, partitions)

    def wait_topic(self, name: str, partitions: int, timeout: float = 20) -> None:
        import time

        deadline = time.monotonic() + timeout
        while True:
            meta = self.metadata([name])
            topic = meta.topics[0]
            if (int(topic.error_code) == 0 and len(topic.partitions) == partitions
                    and all(p.leader_id >= 0 for p in topic.partitions)):
                return
            if time.monotonic() > deadline:
                raise KafkaError(f"topic {name} not ready: {topic.error_code!r}")
            time.sleep(0.01)


def fresh_topic(bootstrap: str, prefix: str, partitions: int = 1) -> str:
    """Create a topic named ``{prefix}-{8 random hex digits}`` and return its name."""
    import uuid

    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    with WireClient(bootstrap) as client:
        client.create_topic(topic, partitions)
    return topic


def supported_versions(client: WireClient) -> dict[int, tuple[int, int]]:
    resp = client.request(API_VERSIONS, 0)
    if int(resp.error_code) != 0:
        raise KafkaError(f"ApiVersions: {resp.error_code!r}")
    return {int(k.api_key): (k.min_version, k.max_version) for k in resp.api_keys}


def error_name(code: int) -> str:
    from kio.schema.errors import ErrorCode

    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
