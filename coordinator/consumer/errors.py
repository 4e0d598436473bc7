"""Error codes of the consumer group protocol that ``coordinator.errors`` does not list yet.

Fold these into ``coordinator/errors.py`` when the runtime rewrite has landed.
"""

from __future__ import annotations

from kafkette.coordinator.assignor.spec import PartitionAssignorError
from kafkette.coordinator.errors import CoordinatorError

UNSUPPORTED_VERSION = 35
FENCED_MEMBER_EPOCH = 110
UNRELEASED_INSTANCE_ID = 111
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113
INVALID_REGULAR_EXPRESSION = 128


__all__ = [
    "CoordinatorError", "FENCED_MEMBER_EPOCH", "INVALID_REGULAR_EXPRESSION",
    "PartitionAssignorError", "STALE_MEMBER_EPOCH", "UNRELEASED_INSTANCE_ID",
    "UNSUPPORTED_ASSIGNOR", "UNSUPPORTED_VERSION",
]
