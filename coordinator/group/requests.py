"""Request and answer values of the classic group and offset APIs, as the coordinator service, the
shard and its managers exchange them (decoded from / encoded to kio by the broker's handlers)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..runtime.error_codes import NONE
from .classic.classic_group import Member, Protocols


@dataclass(slots=True)
class JoinResult:
    error: int = NONE
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(slots=True)
class SyncResult:
    error: int = NONE
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    client_id: str
    client_host: str
    version: int
    reason: str | None = None


@dataclass(slots=True)
class SyncRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]


@dataclass(slots=True)
class CommitPartition:
    """One partition's offset of an OffsetCommit/TxnOffsetCommit."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(slots=True)
class OffsetCommitRequest:
    """An OffsetCommit (or TxnOffsetCommit) but for the offsets it commits: who commits into
    which group. The offsets travel beside it (``CommitPartition`` per partition, request
    order): a consumer's next commit of the same partitions reuses this value."""

    group_id: str
    generation: int  # the classic generation id, or a consumer group member's epoch
    member_id: str
    instance_id: str | None
    retention_ms: int = -1  # OffsetCommit v2-4's retention_time; -1: the broker's
    version: int = 9  # the OffsetCommit version (TxnOffsetCommit: 0, see is_transactional)
    is_transactional: bool = False


# One OffsetCommit as the runtime hands it to the shard: who commits, and the offsets (a tuple,
# not an object: no Python __init__ per commit; the request part is reused by repeats).
OffsetCommit = tuple[OffsetCommitRequest, list[CommitPartition]]

# One classic Heartbeat: (group id, member id, group instance id, generation id).
ClassicHeartbeat = tuple[str, str, "str | None", int]


@dataclass(slots=True)
class DescribedGroup:
    group_id: str
    error: int
    state: str
    protocol_type: str
    protocol_data: str
    members: list[tuple[Member, bytes]]  # (member, metadata or b"")
    error_message: str | None = None
