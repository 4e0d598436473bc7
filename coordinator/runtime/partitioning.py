"""Which coordinator partition a key lives on: Kafka's ``abs(key.hashCode()) % partitions``
(Utils.abs of Java's String.hashCode), memoised per partition count. Used by every coordinator
on the runtime (groups over ``__consumer_offsets``, transactions over ``__transaction_state``).
"""

from __future__ import annotations


def java_string_hashcode(s: str) -> int:
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def kafka_abs(n: int) -> int:
    return 0 if n == -(1 << 31) else abs(n)


# partition count -> id -> partition: the memo of ``partition_for`` (a dict hit costs ~35 ns,
# an lru_cache call ~165, the hash ~6 µs for 30 characters). A service holding one reads it
# inline on its hot paths; it is cleared in place when it grows large.
_PARTITIONS: dict[int, dict[str, int]] = {}
_PARTITIONS_MAX = 65536


def partitions_memo(num_partitions: int) -> dict[str, int]:
    """The memo ``partition_for`` keeps for ``num_partitions`` (id -> partition); a miss in
    it is a call of ``partition_for``."""
    return _PARTITIONS.setdefault(num_partitions, {})


def partition_for(key: str, num_partitions: int) -> int:
    """The partition of a group (or transactional) id: Kafka's abs(hashCode) % count."""
    known = _PARTITIONS.get(num_partitions)
    if known is None:
        known = partitions_memo(num_partitions)
    p = known.get(key)
    if p is None:
        if len(known) >= _PARTITIONS_MAX:
            known.clear()
        p = known[key] = kafka_abs(java_string_hashcode(key)) % num_partitions
    return p
