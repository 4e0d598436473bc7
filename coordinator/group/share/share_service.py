"""The share-group half of the group coordinator service (Kafka's GroupCoordinatorService,
share part): what the ShareGroupHeartbeat / ShareGroupDescribe handlers and the share admin
side call, through ``GroupCoordinator.share_groups()``. Routes a group to its shard through the
service's public routing, runs ops through the runtime and maps failures to error codes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ...runtime.coordinator_runtime import PartitionContext
from ...runtime.error_codes import (
    NONE,
    UNSUPPORTED_VERSION,
    CoordinatorError,
    error_code,
)
from ..group_config import CoordinatorConfig
from ..group_shard import GroupCoordinatorShard
from .share_heartbeat import ShareHeartbeatRequest, ShareHeartbeatResult, validate_request
from .share_manager import DescribedShareGroup

T = TypeVar("T")


class GroupRouting(Protocol):
    """What this needs of the group coordinator service (group_service.GroupCoordinator)."""
    config: CoordinatorConfig

    def context_for(self, group_id: str) -> PartitionContext: ...

    async def read_groups(self, group_ids: list[str],
                          op: Callable[[GroupCoordinatorShard, list[str]], list[T]],
                          failed: Callable[[str, CoordinatorError], T]) -> list[T]: ...

# (error, message, result): the result on success, None with an error
ShareHeartbeatAnswer = tuple[int, "str | None", "ShareHeartbeatResult | None"]
DescribeRow = tuple[str, int, "str | None", "DescribedShareGroup | None"]

NOT_ENABLED = "The share group protocol is not enabled."


def _failed(exc: BaseException) -> ShareHeartbeatAnswer:
    message = exc.message if isinstance(exc, CoordinatorError) else None
    return error_code(exc), message, None


def _answer(answer: Any) -> ShareHeartbeatAnswer:
    if type(answer) is tuple:
        return answer
    return NONE, None, answer


class ShareGroupService:
    def __init__(self, coordinator: GroupRouting) -> None:
        self.coordinator = coordinator

    def add_member_listener(self, callback: Callable[[str, str], None]) -> None:
        """Call ``callback(group_id, member_id)`` once a share member's leaving (epoch -1) or
        fencing (session timeout) is durable."""
        self.coordinator.config.share_member_listeners.append(callback)

    @property
    def enabled(self) -> bool:
        """The share.version feature is finalized at 1 or more."""
        return self.coordinator.config.share.enabled

    def heartbeat(self, request: ShareHeartbeatRequest
                  ) -> ShareHeartbeatAnswer | asyncio.Future:
        """(error, message, result) now, or a future of it once the records are durable."""
        if not self.enabled:
            return UNSUPPORTED_VERSION, NOT_ENABLED, None
        try:
            validate_request(request)  # before routing: an empty group id has no shard
            return self.coordinator.context_for(request.group_id).answer(
                GroupCoordinatorShard.share_group_heartbeat, request, _failed, _answer)
        except CoordinatorError as exc:
            return _failed(exc)

    async def describe(self, group_ids: list[str]) -> list[DescribeRow]:
        """(group id, error, message, described group) per id, request order, committed."""
        if not self.enabled:
            return [(g, UNSUPPORTED_VERSION, NOT_ENABLED, None) for g in group_ids]
        return await self.coordinator.read_groups(
            group_ids, GroupCoordinatorShard.share_group_describe,
            lambda g, exc: (g, exc.code, exc.message, None))

    async def group(self, group_id: str) -> tuple[int, DescribedShareGroup | None]:
        """The admin side's query: (NONE, the share group) for a share group;
        (GROUP_ID_NOT_FOUND, None) for an unknown id or a group of another type; another code
        when the coordinator cannot answer (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS...)."""
        _gid, code, _message, group = (await self.describe([group_id]))[0]
        return code, group
