"""ConsumerGroupDescribe and ShareGroupDescribe: one answer shape for KIP-848 and KIP-932 groups.

The two APIs differ only in where the groups come from and in their member fields; the ACL
checks (DESCRIBE on each group, the group withheld when it names a topic the client may not
DESCRIBE), the error entries and the order Kafka answers in are the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..security.acl import AclOperation, ResourceType
from ._groups_common import ZERO
from .groups import AUTH_OPS_OMITTED

HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."

# (group id, error code, error message, the described group or None)
DescribeRow = tuple[str, int, str | None, Any]
# a described member -> its response fields, given the builder of an assignment field
MemberFields = Callable[[Any, Callable[[Any], Any]], dict[str, Any]]


async def describe_groups(ctx: RequestContext, group_ids: list[str], include_ops: bool,
                          describe: Callable[[list[str]], Awaitable[list[DescribeRow]]],
                          member_fields: MemberFields,
                          member_topics: Callable[[Any], Iterable[str]]) -> Any:
    """The response to ``group_ids``: ``describe`` answers the groups the client may DESCRIBE;
    ``member_topics`` names the topics a member shows (subscribed, assigned...)."""
    group_cls = item_type(ctx.response_type, "groups")
    member_cls = item_type(group_cls, "members")
    assignment_cls = item_type(member_cls, "assignment")
    tp_cls = item_type(assignment_cls, "topic_partitions")

    def assignment(parts: Iterable[Any]) -> Any:
        return make(assignment_cls, topic_partitions=tuple(
            make(tp_cls, topic_id=p.topic_id, topic_name=p.topic_name, partitions=p.partitions)
            for p in parts))

    def empty(group_id: str, code: int, message: str | None) -> Any:
        return make(group_cls, error_code=ErrorCode(code), error_message=message,
                    group_id=group_id, group_state="", group_epoch=0, assignment_epoch=0,
                    assignor_name="", members=(), authorized_operations=AUTH_OPS_OMITTED)

    def hides_topics(group: Any) -> bool:
        names = {name for m in group.members for name in member_topics(m)}
        return bool(names) and bool(ctx.denied(AclOperation.DESCRIBE, ResourceType.TOPIC, names))

    # DESCRIBE on each group; Kafka answers the others after the described ones
    denied = ctx.denied(AclOperation.DESCRIBE, ResourceType.GROUP, group_ids)
    groups = []
    for group_id, code, message, group in await describe(
            [g for g in group_ids if g not in denied]):
        if group is None:
            groups.append(empty(group_id, code, message))
        elif ctx.authorizing and hides_topics(group):
            groups.append(empty(group_id, int(ErrorCode.topic_authorization_failed),
                                HIDDEN_TOPICS))
        else:
            members = tuple(make(member_cls, **member_fields(m, assignment))
                            for m in group.members)
            groups.append(make(
                group_cls, error_code=ErrorCode.none, error_message=None, group_id=group_id,
                group_state=group.group_state, group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch, assignor_name=group.assignor_name,
                members=members,
                authorized_operations=ctx.authorized_operations(ResourceType.GROUP, group_id)
                if include_ops else AUTH_OPS_OMITTED))
    groups.extend(empty(g, int(ErrorCode.group_authorization_failed), None)
                  for g in group_ids if g in denied)
    return make(ctx.response_type, throttle_time=ZERO, groups=tuple(groups))
