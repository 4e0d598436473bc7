"""Kafka wire protocol: framing, headers and codecs built on kio. Pure, no I/O."""
