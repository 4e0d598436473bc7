"""Error codes of the transaction APIs (numeric, as on the wire)."""

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
INVALID_REQUEST = 42
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_NOT_FOUND = 105
TRANSACTION_ABORTABLE = 120


def fenced_for(code: int, version: int, first_version: int) -> int:
    """PRODUCER_FENCED exists from ``first_version`` of an API on (KIP-588); older versions
    get INVALID_PRODUCER_EPOCH, as Kafka's handlers answer them."""
    return INVALID_PRODUCER_EPOCH if code == PRODUCER_FENCED and version < first_version else code
