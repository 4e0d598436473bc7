"""The coordinators, drawn like Kafka's coordinator modules: pure state machines on one runtime.

- ``runtime/``: the coordinator runtime (Kafka's coordinator-common): one context per partition
  of a coordinator's internal topic, its write batches and durable futures, the clock, the log
  interface, key-to-partition routing and the error-code vocabulary every coordinator answers in.
- ``group/``: the group coordinator over ``__consumer_offsets`` (Kafka's group-coordinator):
  classic groups, KIP-848 consumer groups, committed offsets, and the service and shard that
  route to them. Share groups (KIP-932) go in ``group/share/``.
- ``transaction/``: the transaction coordinator over ``__transaction_state``.

The share-state coordinator (KIP-932's ``__share_group_state``) is a further state machine on
the same runtime, beside ``transaction/``.
"""
