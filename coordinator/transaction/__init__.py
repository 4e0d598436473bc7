"""The transaction coordinator: a second state machine on the coordinator runtime, over
``__transaction_state`` (Kafka's transaction-coordinator module)."""
