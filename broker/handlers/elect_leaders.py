"""ElectLeaders (key 43), versions 0-2: preferred (0; v0 has only this) or unclean (1) leader
elections, as Kafka's controller runs them (ReplicationControlManager.electLeaders).

PREFERRED: a partition led by its preferred replica (the first) answers ELECTION_NOT_NEEDED;
else the preferred replica takes the lead if it is live (NONE), or the answer is
PREFERRED_LEADER_NOT_AVAILABLE. UNCLEAN: a partition that has a leader answers
ELECTION_NOT_NEEDED, one without ELIGIBLE_LEADERS_NOT_AVAILABLE (the emulation's data is one
copy: a live replica always leads). Null partitions: every partition of every topic, each topic
listed, partitions that needed no election left out. With several nodes, a leader moved away
from its preferred replica (``kafkette cluster move-leader``) moves back; one node always leads
its own partitions.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..cluster.node_control import coordinators_follow_leaders
from ..cluster.nodes import OFFSETS_TOPIC
from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType

PREFERRED, UNCLEAN = 0, 1
_CLUSTER_DENIED = "Cluster authorization failed."  # Kafka's message for the code
_NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."
_MESSAGES = {
    ErrorCode.election_not_needed: _NOT_NEEDED_MESSAGE,
    ErrorCode.preferred_leader_not_available: "The preferred leader was not available.",
    ErrorCode.eligible_leaders_not_available:
        "Eligible topic partition leaders are not available.",
}


@api(43, 0, 2)
async def handle_elect_leaders(ctx: RequestContext, req: Any) -> Any:
    cls = ctx.response_type
    result_cls = item_type(cls, "replica_election_results")
    part_cls = item_type(result_cls, "partition_result")
    election = int(getattr(req, "election_type", PREFERRED))
    refusal: tuple[ErrorCode, str] | None = None
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        # the controller's check: every partition asked carries the error
        refusal = ErrorCode.cluster_authorization_failed, _CLUSTER_DENIED
    elif election not in (PREFERRED, UNCLEAN):
        refusal = ErrorCode.invalid_request, f"Unknown election type {election}"
    if refusal is not None:
        refused_code, refused_message = refusal
        return make(cls, throttle_time=timedelta(0), error_code=refused_code,
                    replica_election_results=tuple(
                        make(result_cls, topic=t.topic, partition_result=tuple(
                            make(part_cls, partition_id=p, error_code=refused_code,
                                 error_message=refused_message) for p in t.partitions))
                        for t in req.topic_partitions or ()))
    topics = ctx.services.topics
    if req.topic_partitions is None:
        wanted = [(t.name, list(range(t.partitions)), True) for t in topics.all()]
    else:
        wanted = [(t.topic, list(t.partitions), False) for t in req.topic_partitions]
    results = []
    for topic, partitions, every in wanted:
        answered = []
        for p in partitions:
            code, message = _elect(ctx, topic, p, election)
            if every and code == ErrorCode.election_not_needed:
                continue
            answered.append(make(part_cls, partition_id=p, error_code=code,
                                 error_message=message))
        results.append(make(result_cls, topic=topic, partition_result=tuple(answered)))
    nodes = ctx.cluster.nodes
    if nodes is not None and any(topic == OFFSETS_TOPIC for topic, _, _ in wanted):
        # a moved __consumer_offsets leader takes its groups' coordinator along
        await coordinators_follow_leaders(nodes, ctx.services.groups.coordinator)
    return make(cls, throttle_time=timedelta(0), error_code=ErrorCode.none,
                replica_election_results=tuple(results))


def _elect(ctx: RequestContext, topic: str, partition: int,
           election: int) -> tuple[ErrorCode, str | None]:
    info = ctx.services.topics.get(topic)
    if info is None:
        return ErrorCode.unknown_topic_or_partition, f"No such topic as {topic}"
    if not 0 <= partition < info.partitions:
        return ErrorCode.unknown_topic_or_partition, f"No such partition as {topic}-{partition}"
    cluster = ctx.cluster
    if election == UNCLEAN:
        leader = cluster.partition_state(topic, partition)[0]
        code = (ErrorCode.election_not_needed if leader >= 0
                else ErrorCode.eligible_leaders_not_available)
    else:
        moved = cluster.elect_preferred(topic, partition)
        code = (ErrorCode.none if moved else ErrorCode.election_not_needed if moved is False
                else ErrorCode.preferred_leader_not_available)
    return code, _MESSAGES.get(code)
