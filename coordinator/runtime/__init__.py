"""The coordinator runtime (Kafka's coordinator-common): what every coordinator's state machine
runs on. ``coordinator_runtime`` (partition contexts, batched writes, durable futures),
``leadership`` (the partitions a node leads: loading, unloading and closing their contexts),
``clock`` (timers), ``coordinator_log`` (the internal topic as the runtime sees it), ``result``
(what a write op returns), ``serving`` (the node a request came in on), ``partitioning`` (key ->
partition) and ``error_codes`` (the coordinators' error codes and the exception -> code mapping)."""
