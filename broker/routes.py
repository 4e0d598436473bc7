"""The static API route table and the ``@api`` decorator handler modules register with.

``TABLE`` says which API keys and versions the broker serves and which module handles each; it
is plain data, so ApiVersions and the connection's version check need no handler imported.
A handler module registers its function with ``@api(key, min_version, max_version)``, which
must agree with the table: a mismatch, an unlisted key, or a second function for a key is an
error at import. ``broker/registry.py`` imports a handler module when its API is first requested.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import RequestContext

Handler = Callable[["RequestContext", Any], Any | Awaitable[Any]]

_H = "kafkette.broker.handlers."
# api key: (min version, max version, min accepted version, module of the handler).
# min accepted > min: versions advertised but refused on the wire (Produce v0-2: KAFKA-18659
# advertises min 0). Keep in step with the @api lines of the handlers (tests/spine checks it).
TABLE: dict[int, tuple[int, int, int, str]] = {
    0: (0, 12, 3, _H + "produce"),
    1: (4, 17, 4, _H + "fetch"),
    2: (1, 10, 1, _H + "list_offsets"),
    3: (0, 13, 0, _H + "metadata"),
    8: (2, 9, 2, _H + "offsets"),  # OffsetCommit
    9: (1, 9, 1, _H + "offsets"),  # OffsetFetch
    10: (0, 6, 0, _H + "find_coordinator"),
    11: (0, 9, 0, _H + "groups"),  # JoinGroup
    12: (0, 4, 0, _H + "groups"),  # Heartbeat
    13: (0, 5, 0, _H + "groups"),  # LeaveGroup
    14: (0, 5, 0, _H + "groups"),  # SyncGroup
    15: (0, 6, 0, _H + "groups"),  # DescribeGroups
    16: (0, 5, 0, _H + "groups"),  # ListGroups
    17: (0, 1, 0, _H + "sasl"),  # SaslHandshake (before authentication: broker/security/)
    18: (0, 4, 0, "kafkette.broker.api_versions"),
    19: (2, 7, 2, _H + "create_topics"),
    20: (1, 6, 1, _H + "delete_topics"),
    21: (0, 2, 0, _H + "delete_records"),
    22: (0, 5, 0, _H + "init_producer_id"),
    23: (2, 4, 2, _H + "offset_for_leader_epoch"),
    24: (0, 5, 0, _H + "transactions"),  # AddPartitionsToTxn
    25: (0, 4, 0, _H + "transactions"),  # AddOffsetsToTxn
    26: (0, 5, 0, _H + "transactions"),  # EndTxn
    27: (1, 2, 1, _H + "write_txn_markers"),
    28: (0, 5, 0, _H + "transactions"),  # TxnOffsetCommit
    29: (1, 3, 1, _H + "acls"),  # DescribeAcls
    30: (1, 3, 1, _H + "acls"),  # CreateAcls
    31: (1, 3, 1, _H + "acls"),  # DeleteAcls
    32: (1, 4, 1, _H + "describe_configs"),
    33: (0, 2, 0, _H + "alter_configs"),
    35: (1, 4, 1, _H + "describe_log_dirs"),
    36: (0, 2, 0, _H + "sasl"),  # SaslAuthenticate (before authentication: broker/security/)
    37: (0, 3, 0, _H + "create_partitions"),
    42: (0, 2, 0, _H + "groups"),  # DeleteGroups
    43: (0, 2, 0, _H + "elect_leaders"),
    44: (0, 1, 0, _H + "alter_configs"),  # IncrementalAlterConfigs
    45: (0, 1, 0, _H + "partition_reassignments"),  # AlterPartitionReassignments
    46: (0, 0, 0, _H + "partition_reassignments"),  # ListPartitionReassignments
    47: (0, 0, 0, _H + "offsets"),  # OffsetDelete
    48: (0, 1, 0, _H + "client_quotas"),  # DescribeClientQuotas
    49: (0, 1, 0, _H + "client_quotas"),  # AlterClientQuotas
    50: (0, 0, 0, _H + "scram_credentials"),  # DescribeUserScramCredentials
    51: (0, 0, 0, _H + "scram_credentials"),  # AlterUserScramCredentials
    60: (0, 2, 0, _H + "describe_cluster"),
    61: (0, 0, 0, _H + "describe_producers"),
    65: (0, 0, 0, _H + "transactions"),  # DescribeTransactions
    66: (0, 1, 0, _H + "transactions"),  # ListTransactions
    68: (0, 1, 0, _H + "consumer_group"),  # ConsumerGroupHeartbeat
    69: (0, 1, 0, _H + "consumer_group"),  # ConsumerGroupDescribe
    71: (0, 0, 0, _H + "telemetry"),  # GetTelemetrySubscriptions
    72: (0, 0, 0, _H + "telemetry"),  # PushTelemetry
    74: (0, 1, 0, _H + "telemetry"),  # ListConfigResources (ListClientMetricsResources at v0)
    75: (0, 0, 0, _H + "describe_topic_partitions"),
    76: (1, 1, 1, _H + "share_group"),  # ShareGroupHeartbeat
    77: (1, 1, 1, _H + "share_group"),  # ShareGroupDescribe
    78: (1, 1, 1, _H + "share_fetch"),  # ShareFetch
    79: (1, 1, 1, _H + "share_fetch"),  # ShareAcknowledge
    90: (0, 1, 0, _H + "share_offsets"),  # DescribeShareGroupOffsets
    91: (0, 0, 0, _H + "share_offsets"),  # AlterShareGroupOffsets
    92: (0, 0, 0, _H + "share_offsets"),  # DeleteShareGroupOffsets
}

# What a route lets the connection do besides handling one request at a time, each decoded
# afresh (broker/connection.py acts on these and knows no API by its key):
#
# PIPELINED: the handler answers now or with a future that waits only for its write to be
#   durable (its op is applied when the handler returns), so the connection handles the
#   requests of a pipelined API behind it meanwhile; answers still leave in request order.
PIPELINED: frozenset[int] = frozenset({8})  # OffsetCommit
# IDENTICAL_REPEATS: a repeat identical but for its correlation id runs on the first one's
#   decoded request and context (broker/request_memo.py): the decoded request is immutable and
#   the handler keeps neither it nor its context past the answer. Repeats that differ in some
#   int64 fields are registered with ``@repeats`` beside the handler (REPEATS below).
IDENTICAL_REPEATS: frozenset[int] = frozenset({12, 68})  # Heartbeat, ConsumerGroupHeartbeat
# A request of a version the route does not serve closes the connection, unless the route has
# an answer for it (broker/registry.py: ApiVersions answers v0 UNSUPPORTED_VERSION, KIP-511).


# api key -> the function its module registered (filled as handler modules are imported)
REGISTERED: dict[int, Handler] = {}


# api key -> (ctx, request) -> (int64 field values, runner): for a request that repeats but for
# those fields, the connection calls runner(ctx, values) instead of decoding the repeat
# (broker/request_memo.py). Registered with ``@repeats(key)`` beside the handler.
Repeat = Callable[["RequestContext", Any],
                  tuple[list[int], Callable[["RequestContext", list[int]], Any]]]
REPEATS: dict[int, Repeat] = {}


def repeats(key: int):
    def register(fn: Repeat) -> Repeat:
        entry = TABLE.get(key)
        if entry is None or fn.__module__ != entry[3] or key in REPEATS:
            raise DuplicateRouteError(f"api key {key}: {fn.__module__}.{fn.__qualname__} "
                                      "cannot register its repeats")
        REPEATS[key] = fn
        return fn

    return register


class DuplicateRouteError(RuntimeError):
    """Two handlers registered for the same API key."""


def api(key: int, min_version: int, max_version: int, *, min_accepted: int | None = None):
    def register(fn: Handler) -> Handler:
        entry = TABLE.get(key)
        where = f"{fn.__module__}.{fn.__qualname__}"
        if entry is None:
            raise RuntimeError(f"api key {key} ({where}) is not in broker/routes.py TABLE")
        existing = REGISTERED.get(key)
        if existing is not None or fn.__module__ != entry[3]:
            owner = (f"{existing.__module__}.{existing.__qualname__}" if existing is not None
                     else entry[3])
            raise DuplicateRouteError(
                f"api key {key} is already handled by {owner}; cannot register {where}")
        accepted = min_version if min_accepted is None else min_accepted
        if (min_version, max_version, accepted) != entry[:3]:
            raise RuntimeError(
                f"{where}: @api({key}, {min_version}, {max_version}, min_accepted={accepted}) "
                f"disagrees with broker/routes.py TABLE {entry[:3]}")
        REGISTERED[key] = fn
        return fn

    return register
