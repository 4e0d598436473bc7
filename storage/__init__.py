"""Partition logs in Kafka's on-disk format.

``topics.LogManager`` owns the topic catalog and one ``log.PartitionLog`` per partition
(segments in ``segment``, I/O thread in ``writer``, idempotent-producer state in
``producer_state``, retention and compaction in ``cleaner``, topic configs in ``topic_config``).
"""
