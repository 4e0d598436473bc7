"""Kafka wire protocol: framing, headers and codecs built on kio. Pure, no I/O."""

import sys

# kio imports hypothesis (when installed) only to register test strategies; that costs about
# 170 ms of broker start-up. Hide it while kio loads unless something already imported it.
if "hypothesis" not in sys.modules:
    sys.modules["hypothesis"] = None  # type: ignore[assignment]
    try:
        import kio.static.primitive  # noqa: F401
    finally:
        del sys.modules["hypothesis"]
