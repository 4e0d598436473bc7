"""Produce then fetch 1 MB record batches, from a separate process.

``python -m bench.figures.pfgen --bootstrap HOST:PORT --topic T [--mb 128] [--partitions 4]``
prints one JSON line ``{"produce": MB/s, "fetch": MB/s}``; ``--raw`` prints the raw loopback
copy in both directions instead: ``{"raw_send": MB/s, "raw_recv": MB/s}``.

The produce, fetch and raw-copy loops are the storage bench's (``bench.produce_fetch``:
pre-encoded Produce v9 with one 1 MB record per batch, acks=1, 5 in flight, round-robin over the
partitions; Fetch v12 one request at a time, 1 MB per partition; raw copy to/from a separate
process). Here they are pointed at any broker; after producing, ListOffsets must show every
batch appended (otherwise the run fails rather than report a bogus rate). MB = 2^20 bytes.
"""

from __future__ import annotations

import argparse
import json

from bench.figures.wire import LIST_OFFSETS, KafkaError, WireClient, error_name
from bench.produce_fetch import MB, bench_fetch, bench_produce, raw_copy
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type


def end_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    with WireClient(bootstrap) as client:
        version = client.version(LIST_OFFSETS)
        req = request_type(LIST_OFFSETS, version)
        topic_cls = item_type(req, "topics")
        part_cls = item_type(topic_cls, "partitions")
        parts = tuple(make(part_cls, partition_index=p, current_leader_epoch=-1, timestamp=-1,
                           max_num_offsets=1) for p in range(partitions))
        resp = client.request(LIST_OFFSETS, version, replica_id=-1, isolation_level=0,
                              topics=(make(topic_cls, name=topic, partitions=parts),))
    out = {}
    for p in resp.topics[0].partitions:
        if int(p.error_code):
            raise KafkaError(f"ListOffsets: {error_name(int(p.error_code))}")
        out[p.partition_index] = p.offset
    return [out[p] for p in range(partitions)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("--mb", type=int, default=128)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--inflight", type=int, default=5)
    args = parser.parse_args()
    if args.raw:
        print(json.dumps({"raw_send": raw_copy("sink", args.mb * MB),
                          "raw_recv": raw_copy("source", args.mb * MB)}), flush=True)
        return
    per_partition = args.mb // args.partitions
    produced = bench_produce(args.bootstrap, args.topic, args.partitions,
                             per_partition * args.partitions, args.inflight)
    ends = end_offsets(args.bootstrap, args.topic, args.partitions)
    if ends != [per_partition] * args.partitions:
        raise KafkaError(f"after producing {per_partition} batches per partition the end "
                         f"offsets are {ends}: some produce requests failed")
    fetched = bench_fetch(args.bootstrap, args.topic, args.partitions, per_partition, MB)
    print(json.dumps({"produce": produced, "fetch": fetched}), flush=True)


if __name__ == "__main__":
    main()
