"""Committed offsets: OffsetCommit (8) v2-9, OffsetFetch (9) v1-9, OffsetDelete (47) v0.
Decode, call the coordinator service, encode."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import lru_cache, partial
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.coordinator.group.requests import CommitPartition, OffsetCommitRequest
from kafkette.coordinator.runtime.error_codes import NONE
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import response_type

from ..context import RequestContext
from ..routes import api, repeats
from ..security.acl import AclOperation, ResourceType
from ._groups_common import ZERO, coordinator, ms

READ, DESCRIBE = AclOperation.READ, AclOperation.DESCRIBE
GROUP, TOPIC = ResourceType.GROUP, ResourceType.TOPIC
GROUP_AUTHORIZATION_FAILED = int(ErrorCode.group_authorization_failed)
TOPIC_AUTHORIZATION_FAILED = int(ErrorCode.topic_authorization_failed)

# OffsetCommit ------------------------------------------------------------------------------------

Layout = tuple[tuple[str, tuple[int, ...]], ...]


class _CommitPlan:
    """An OffsetCommit but for its committed offsets: called with the offsets (request order),
    it commits them. A consumer's next commit of the same partitions runs on the same plan with
    its own offsets (``_commit_repeat``, broker/request_memo.py)."""

    __slots__ = ("request", "partitions", "build", "topics")

    def __init__(self, version: int, req: Any) -> None:
        self.request = OffsetCommitRequest(
            req.group_id, req.generation_id_or_member_epoch, req.member_id,
            req.group_instance_id if version >= 7 else None,
            ms(req.retention_time) if 2 <= version <= 4 else -1, version)
        epochs = version >= 6  # committed_leader_epoch: v6+
        layout_items = []
        partitions = []  # (topic, partition, leader epoch, metadata)
        for t in req.topics:  # loops, not generators: the hot path of every commit
            name = t.name
            indexes = []
            for p in t.partitions:
                index = p.partition_index
                indexes.append(index)
                partitions.append((name, index, p.committed_leader_epoch if epochs else -1,
                                   p.committed_metadata))
            layout_items.append((name, tuple(indexes)))
        self.partitions = partitions
        self.topics = tuple(name for name, _ in layout_items)
        # The codes become the response as the op runs; a durable write returns the runtime's
        # future of it, which the connection pipelines (broker/connection.py).
        self.build = partial(_built_commit_response, version, tuple(layout_items))

    def __call__(self, ctx: RequestContext, offsets: list[int]) -> Any:
        """Answers now, or with a future once the offsets are durable."""
        partitions = [CommitPartition(topic, index, offset, epoch, metadata)
                      for (topic, index, epoch, metadata), offset
                      in zip(self.partitions, offsets, strict=True)]
        coord = ctx.services.groups.coordinator  # coordinator(ctx), inlined: the hot path
        if coord is None:
            coord = coordinator(ctx)
        if ctx.services.acls is not None:  # ctx.authorizing, inlined: the hot path
            return self._authorized(ctx, coord, partitions)
        return coord.commit_offsets(self.request, partitions, self.build)

    def _authorized(self, ctx: RequestContext, coord: Any, partitions: list[Any]) -> Any:
        """Kafka's checks: READ on the group (else every partition GROUP_AUTHORIZATION_FAILED),
        then READ on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions, the others are
        committed)."""
        if not ctx.authorize(READ, GROUP, self.request.group_id):
            return self.build([GROUP_AUTHORIZATION_FAILED] * len(partitions))
        denied = ctx.denied(READ, TOPIC, self.topics)
        if not denied:
            return coord.commit_offsets(self.request, partitions, self.build)
        refused = [TOPIC_AUTHORIZATION_FAILED if p.topic in denied else -1 for p in partitions]
        allowed = [p for p in partitions if p.topic not in denied]
        if not allowed:
            return self.build(refused)

        def build(codes: list[int]) -> Any:
            answered = iter(codes)
            return self.build([next(answered) if c < 0 else c for c in refused])
        return coord.commit_offsets(self.request, allowed, build)


def _committed_offsets(req: Any) -> list[int]:
    return [p.committed_offset for t in req.topics for p in t.partitions]


@api(8, 2, 9)
def handle_offset_commit(ctx: RequestContext, req):
    offsets, plan = _commit_repeat(ctx, req)
    return plan(ctx, offsets)


@repeats(8)
def _commit_repeat(ctx: RequestContext, req):
    return _committed_offsets(req), _CommitPlan(ctx.api_version, req)


def _built_commit_response(version: int, layout: Layout, codes: list[int]):
    return _commit_response(version, layout, tuple(codes))


@lru_cache(maxsize=1024)
def _commit_response(version: int, layout: Layout, codes: tuple[int, ...]):
    """OffsetCommit response; consumers commit the same partitions again and again, and the
    codec reuses the encoding of a response object it has seen."""
    cls = response_type(8, version)
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    answers = iter(codes)
    return make(cls, throttle_time=ZERO, topics=tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(part_cls, partition_index=p, error_code=ErrorCode(next(answers)))
            for p in parts))
        for name, parts in layout))


# OffsetFetch -------------------------------------------------------------------------------------

def _topics(ctx_cls: type, rows: list, copy_error: int | None = None) -> tuple:
    topic_cls = item_type(ctx_cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    return tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(part_cls, partition_index=p, committed_offset=off, committed_leader_epoch=epoch,
                 metadata=meta, error_code=ErrorCode(err if copy_error is None else copy_error))
            for p, off, epoch, meta, err in parts))
        for name, parts in rows)


def _wanted(topics) -> list[tuple[str, list[int]]] | None:
    return None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics]


Wanted = list[tuple[str, list[int]]] | None


async def _authorized_fetch(ctx: RequestContext, group_id: str, wanted: Wanted,
                            fetch: Callable[[Wanted], Awaitable[tuple[int, list]]]
                            ) -> tuple[int, list]:
    """``fetch(wanted)`` as Kafka authorizes OffsetFetch: DESCRIBE on the group (else
    GROUP_AUTHORIZATION_FAILED), then DESCRIBE on each topic: named ones it may not describe
    are answered TOPIC_AUTHORIZATION_FAILED, and left out of an all-topics answer."""
    if not ctx.authorizing:
        return await fetch(wanted)
    if not ctx.authorize(DESCRIBE, GROUP, group_id):
        return GROUP_AUTHORIZATION_FAILED, [(name, [(p, -1, -1, "", GROUP_AUTHORIZATION_FAILED)
                                                    for p in parts])
                                            for name, parts in wanted or ()]
    if wanted is None:
        error, rows = await fetch(None)
        hidden = ctx.denied(DESCRIBE, TOPIC, (name for name, _ in rows))
        return error, [row for row in rows if row[0] not in hidden]
    denied = ctx.denied(DESCRIBE, TOPIC, (name for name, _ in wanted))
    error, rows = await fetch([w for w in wanted if w[0] not in denied])
    return error, list(rows) + [(name, [(p, -1, -1, "", TOPIC_AUTHORIZATION_FAILED)
                                        for p in parts])
                                for name, parts in wanted if name in denied]


@api(9, 1, 9)
async def handle_offset_fetch(ctx: RequestContext, req):
    v = ctx.api_version
    cls = ctx.response_type
    coord = coordinator(ctx)
    if v >= 8:
        group_cls = item_type(cls, "groups")
        out = []
        for g in req.groups:
            member_id, member_epoch = getattr(g, "member_id", None), getattr(g, "member_epoch", -1)
            if member_id is not None or member_epoch >= 0:  # v9, KIP-848 members
                fetch = partial(coord.fetch_offsets_as_member, g.group_id, member_id,
                                member_epoch, require_stable=req.require_stable)
            else:
                fetch = partial(coord.fetch_offsets, g.group_id,
                                require_stable=req.require_stable)
            error, rows = await _authorized_fetch(ctx, g.group_id, _wanted(g.topics), fetch)
            out.append(make(group_cls, group_id=g.group_id, error_code=ErrorCode(error),
                            topics=_topics(group_cls, rows if error == NONE else [])))
        return ctx.respond(throttle_time=ZERO, groups=tuple(out))
    topics = req.topics if v >= 2 else (req.topics or ())
    error, rows = await _authorized_fetch(
        ctx, req.group_id, _wanted(topics), partial(
            coord.fetch_offsets, req.group_id,
            require_stable=getattr(req, "require_stable", False)))
    if v < 2:
        return ctx.respond(topics=_topics(cls, rows, copy_error=error if error else None))
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error),
                       topics=_topics(cls, rows if error == NONE else []))


# OffsetDelete ------------------------------------------------------------------------------------

@api(47, 0, 0)
async def handle_offset_delete(ctx: RequestContext, req):
    topic_cls = item_type(ctx.response_type, "topics")
    part_cls = item_type(topic_cls, "partitions")
    # DELETE on the group, then READ on each topic (Kafka's checks)
    if not ctx.authorize(AclOperation.DELETE, GROUP, req.group_id):
        return ctx.respond(error_code=ErrorCode.group_authorization_failed, throttle_time=ZERO,
                           topics=())
    denied = ctx.denied(READ, TOPIC, (t.name for t in req.topics))
    top, per = await coordinator(ctx).delete_offsets(
        req.group_id, [(t.name, [p.partition_index for p in t.partitions]) for t in req.topics
                       if t.name not in denied])
    if denied:
        per = {**per, **{(t.name, p.partition_index): TOPIC_AUTHORIZATION_FAILED
                         for t in req.topics if t.name in denied for p in t.partitions}}
    return ctx.respond(error_code=ErrorCode(top), throttle_time=ZERO, topics=tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition_index,
                 error_code=ErrorCode(per.get((t.name, p.partition_index), NONE)))
            for p in t.partitions))
        for t in req.topics) if top == NONE else ())
