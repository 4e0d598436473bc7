"""Helpers shared by the group API handlers."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from kafkette.coordinator.errors import COORDINATOR_NOT_AVAILABLE, CoordinatorError

if TYPE_CHECKING:
    from kafkette.coordinator.service import GroupCoordinator
    from kafkette.coordinator.shard import Shard

    from ..context import RequestContext

ZERO = timedelta(0)
_MS = timedelta(milliseconds=1)


def ms(value: timedelta | int) -> int:
    return value // _MS if isinstance(value, timedelta) else int(value)


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    coord = ctx.services.groups.coordinator
    if coord is None:
        raise CoordinatorError(COORDINATOR_NOT_AVAILABLE)
    return coord


def shard_for(ctx: RequestContext, group_id: str) -> Shard:
    return coordinator(ctx).shard_for(group_id)
