"""The error codes every coordinator answers (numeric, as on the wire; Kafka's Errors), the
exception a coordinator op raises with one, and the mapping of any failure to its code."""

from __future__ import annotations

import logging

log = logging.getLogger("kafkette.coordinator")

UNKNOWN_SERVER_ERROR = -1
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_FETCH_SIZE = 4
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
MESSAGE_TOO_LARGE = 10
OFFSET_METADATA_TOO_LARGE = 12
NETWORK_EXCEPTION = 13
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
RECORD_LIST_TOO_LARGE = 18
NOT_ENOUGH_REPLICAS = 19
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
KAFKA_STORAGE_ERROR = 56
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNSTABLE_OFFSET_COMMIT = 88
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_NOT_FOUND = 105
FENCED_MEMBER_EPOCH = 110
UNRELEASED_INSTANCE_ID = 111
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113
TRANSACTION_ABORTABLE = 120
INVALID_REGULAR_EXPRESSION = 128


class CoordinatorError(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or str(code))
        self.code = code
        self.message = message


def append_error(exc: BaseException) -> int:
    """A failed log append, as the error a group API returns (Kafka:
    appendGroupMetadataErrorToResponseError, then CoordinatorOperationExceptionHelper)."""
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        if code in (UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT):
            return COORDINATOR_NOT_AVAILABLE
        if code in (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR):
            return NOT_COORDINATOR
        if code in (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE):
            return UNKNOWN_SERVER_ERROR
        if code == NETWORK_EXCEPTION:
            return COORDINATOR_LOAD_IN_PROGRESS
        return code
    if isinstance(exc, TimeoutError):  # the write timed out: REQUEST_TIMED_OUT
        return COORDINATOR_NOT_AVAILABLE
    if isinstance(exc, OSError):  # the disk failed: KAFKA_STORAGE_ERROR
        return NOT_COORDINATOR
    return UNKNOWN_SERVER_ERROR


def error_code(exc: BaseException) -> int:
    """The code a failed op answers (CoordinatorOperationExceptionHelper)."""
    if isinstance(exc, CoordinatorError):
        return exc.code
    code = append_error(exc)
    if code == UNKNOWN_SERVER_ERROR:
        log.error("coordinator operation hit an unexpected exception: %r", exc)
    return code


def fenced_for(code: int, version: int, first_version: int) -> int:
    """PRODUCER_FENCED exists from ``first_version`` of an API on (KIP-588); older versions
    get INVALID_PRODUCER_EPOCH, as Kafka's handlers answer them."""
    return INVALID_PRODUCER_EPOCH if code == PRODUCER_FENCED and version < first_version else code
