"""The share-state coordinator (KIP-932): the durable state of share-partitions.

Kafka's share-coordinator module: a state machine on the coordinator runtime over
``__share_group_state``, keyed by (group, topic id, partition), holding each share-partition's
state epoch, start offset and the state batches of its in-flight records, written as Kafka's
ShareSnapshot / ShareUpdate records. ``persister.py`` is the interface the broker's share
partitions use to read and write that state (Kafka's ``Persister``).
"""
