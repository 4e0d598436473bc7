"""Kafka error codes the coordinator returns (numeric, as on the wire)."""

from __future__ import annotations

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
REQUEST_TIMED_OUT = 7
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
INVALID_REQUEST = 42
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNSTABLE_OFFSET_COMMIT = 88


class CoordinatorError(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or str(code))
        self.code = code
        self.message = message


def append_error(exc: BaseException) -> int:
    """A failed log append, as the error a group API returns (Kafka: appendGroupMetadataErrorToResponseError)."""
    code = getattr(exc, "code", None)
    if code in (UNKNOWN_TOPIC_OR_PARTITION, 19, REQUEST_TIMED_OUT):
        return COORDINATOR_NOT_AVAILABLE
    if code in (6, 56):
        return NOT_COORDINATOR
    if code in (10, 18, 4):
        return UNKNOWN_SERVER_ERROR
    if isinstance(exc, TimeoutError):
        return COORDINATOR_NOT_AVAILABLE
    if isinstance(exc, OSError):
        return NOT_COORDINATOR
    return COORDINATOR_NOT_AVAILABLE
