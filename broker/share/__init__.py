"""Share partitions and share sessions (KIP-932): ShareFetch and ShareAcknowledge.

Record states, acquisition locks and delivery counts of each (group, topic-partition), kept in
memory on the partition's leader and made durable through the share-state coordinator's
``Persister`` (``kafkette.coordinator.share.persister``).
"""
