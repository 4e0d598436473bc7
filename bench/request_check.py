"""Cost of the request bounds check (protocol/validate.py) next to kio's decode, per request.

    python -m bench.request_check [--n 200000]

For the hot requests (Heartbeat, OffsetCommit of one partition, Fetch of one partition, Metadata
of one topic, Produce of one 1 KiB batch) prints µs per decode without the check (kio only), the
check alone, and decode with the check (what the broker runs).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import codec, encode_request
from kafkette.protocol.headers import HeaderParser
from kafkette.protocol.validate import check_body


def _samples() -> dict[str, tuple[int, int, Any]]:
    def req(key: int, version: int, **fields: Any) -> tuple[int, int, Any]:
        return key, version, make(codec(key, version).request_type, **fields)

    commit = codec(8, 8).request_type
    commit_topic = item_type(commit, "topics")
    topic = make(commit_topic, name="orders", partitions=(make(
        item_type(commit_topic, "partitions"), partition_index=0, committed_offset=42,
        committed_metadata=""),))
    fetch = codec(1, 12).request_type
    fetch_topic = item_type(fetch, "topics")
    ftopic = make(fetch_topic, topic="orders", partitions=(make(
        item_type(fetch_topic, "partitions"), partition=0, fetch_offset=100,
        partition_max_bytes=1 << 20),))
    produce = codec(0, 9).request_type
    produce_topic = item_type(produce, "topic_data")
    ptopic = make(produce_topic, name="orders", partition_data=(make(
        item_type(produce_topic, "partition_data"), index=0, records=bytes(1024)),))
    metadata = codec(3, 12).request_type
    return {
        "Heartbeat v4": req(12, 4, group_id="group-1", generation_id=3, member_id="member-1"),
        "OffsetCommit v8": req(8, 8, group_id="group-1", generation_id_or_member_epoch=3,
                               member_id="member-1", topics=(topic,)),
        "Fetch v12": req(1, 12, max_wait=500, min_bytes=1, max_bytes=1 << 20, topics=(ftopic,),
                         forgotten_topics_data=()),
        "Metadata v12": req(3, 12, topics=(make(item_type(metadata, "topics"), name="orders", topic_id=None),),
                            allow_auto_topic_creation=False,
                            include_topic_authorized_operations=False),
        "Produce v9": req(0, 9, acks=-1, timeout=30000, topic_data=(ptopic,)),
    }


def _per_call(fn: Any, n: int, repeats: int = 7) -> float:
    """µs per call: the best of ``repeats`` runs (the machine is shared; the minimum is the cost)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n // repeats):
            fn()
        best = min(best, (time.perf_counter() - start) / (n // repeats) * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200_000)
    args = parser.parse_args()
    print(f"{'request':<16} {'kio decode':>11} {'check':>8} {'checked decode':>15}  (µs)")
    for name, (key, version, body) in _samples().items():
        api = codec(key, version)
        frame = encode_request(key, version, 1, "bench", body)[4:]
        _, offset = HeaderParser().parse(frame, api.flexible)
        view = memoryview(frame)
        kio_only = _per_call(lambda a=api, v=view, o=offset: a._read(v, o), args.n)
        check = _per_call(lambda a=api, f=frame, o=offset: check_body(a.request_type, f, o, 10**6),
                          args.n)
        both = _per_call(lambda a=api, f=frame, o=offset: a.decode(f, o), args.n)
        print(f"{name:<16} {kio_only:>11.2f} {check:>8.2f} {both:>15.2f}")


if __name__ == "__main__":
    main()
