"""Produce and fetch throughput with 1 MB record batches on loopback.

``python -m bench.produce_fetch [--runs 5] [--mb 256] [--inflight 5]``

kafkette runs as its own process (``python -m broker serve``); this process is the client, a
raw socket client built on the project codec with pre-encoded requests so the client costs as
little as possible. In the same run a raw loopback socket copy (a separate process sending or
discarding 1 MB buffers) gives the baseline; every figure is a median over ``--runs`` runs and
is printed with its ratio to the raw copy.

Produce: Produce v9 requests each carrying one 1 MB batch (acks=1), round-robin over the
partitions, ``--inflight`` requests outstanding as a Java producer keeps up to 5. Fetch: one
Fetch v12 in flight over all partitions with a 1 MB partition limit (the Java consumer's
defaults), reading everything that was produced; MB/s counts response bytes.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import socket
import statistics
import struct
import sys
import tempfile
import time
from datetime import timedelta

from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import encode_request, request_type
from kafkette.protocol.records import build_batch
from kafkette.protocol.varint import read_uvarint

MB = 1 << 20
_I32 = struct.Struct(">i")


# Raw loopback baseline ------------------------------------------------------------------------------


def _recv_total(sock: socket.socket, total: int, buf: bytearray) -> int:
    """Read and discard up to ``total`` bytes through ``buf``; returns what arrived."""
    view = memoryview(buf)
    got = 0
    while got < total:
        n = sock.recv_into(view)
        if not n:
            break
        got += n
    return got

def _raw_server(port_q: mp.Queue, mode: str, total: int) -> None:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port_q.put(srv.getsockname()[1])
    conn, _ = srv.accept()
    buf = bytearray(MB)
    if mode == "sink":
        _recv_total(conn, total, buf)
        conn.sendall(b"k")
    else:
        data = bytes(buf)
        sent = 0
        while sent < total:
            conn.sendall(data)
            sent += len(data)
    conn.close()


def raw_copy(mode: str, total: int) -> float:
    """MB/s of a plain socket copy: 'sink' = client sends, 'source' = client receives."""
    q: mp.Queue = mp.Queue()
    proc = mp.Process(target=_raw_server, args=(q, mode, total), daemon=True)
    proc.start()
    port = q.get(timeout=10)
    sock = socket.create_connection(("127.0.0.1", port))
    data = bytes(MB)
    start = time.perf_counter()
    if mode == "sink":
        sent = 0
        while sent < total:
            sock.sendall(data)
            sent += MB
        sock.recv(1)
    else:
        _recv_total(sock, total, bytearray(MB))
    elapsed = time.perf_counter() - start
    sock.close()
    proc.join(5)
    return total / MB / elapsed


# Kafka wire client -------------------------------------------------------------------------------------

class Conn:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray(64 * MB)
        self.view = memoryview(self.buf)

    def read_frame(self) -> memoryview:
        self._fill(0, 4)
        (size,) = _I32.unpack_from(self.buf, 0)
        if size > len(self.buf):
            self.buf = bytearray(size)
            self.view = memoryview(self.buf)
        self._fill(0, size)
        return self.view[:size]

    def _fill(self, start: int, n: int) -> None:
        got = 0
        while got < n:
            r = self.sock.recv_into(self.view[start + got : start + n])
            if not r:
                raise ConnectionError("broker closed the connection")
            got += r


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from kafkette.broker.cli.wire_client import WireClient

    with WireClient(bootstrap) as w:
        cls = request_type(19, 7)
        topic = make(item_type(cls, "topics"), name=name, num_partitions=partitions,
                     replication_factor=1, assignments=(), configs=())
        w.request(19, 7, topics=(topic,), timeout=timedelta(seconds=10), validate_only=False)


def produce_frame(topic: str, partition: int, batch: bytes, acks: int = 1) -> bytearray:
    cls = request_type(0, 9)
    tcls = item_type(cls, "topic_data")
    pdata = make(item_type(tcls, "partition_data"), index=partition, records=batch)
    body = make(cls, transactional_id=None, acks=acks, timeout=timedelta(seconds=30),
                topic_data=(make(tcls, name=topic, partition_data=(pdata,)),))
    return bytearray(encode_request(0, 9, 1, "bench", body))


def bench_produce(bootstrap: str, topic: str, partitions: int, total_mb: int, inflight: int) -> float:
    return produce_over(Conn(bootstrap), topic, partitions, total_mb, inflight)


def produce_over(conn: Conn, topic: str, partitions: int, total_mb: int, inflight: int) -> float:
    """MB/s of ``total_mb`` 1 MB batches (acks=1) produced on ``conn``, ``inflight`` at a
    time, round-robin over the partitions; closes ``conn``."""
    batch = build_batch([(None, os.urandom(MB - 200))], base_timestamp=int(time.time() * 1000))
    frames = [produce_frame(topic, p, batch) for p in range(partitions)]
    n = total_mb
    sent = received = 0
    start = time.perf_counter()
    while received < n:
        while sent < n and sent - received < inflight:
            frame = frames[sent % partitions]
            struct.pack_into(">i", frame, 8, sent)  # correlation id
            conn.sock.sendall(frame)
            sent += 1
        conn.read_frame()
        received += 1
    elapsed = time.perf_counter() - start
    conn.sock.close()
    return n * len(batch) / MB / elapsed


def fetch_frame(topic: str, offsets: list[int], partition_max: int) -> bytes:
    cls = request_type(1, 12)
    tcls = item_type(cls, "topics")
    pcls = item_type(tcls, "partitions")
    parts = tuple(make(pcls, partition=p, fetch_offset=o, partition_max_bytes=partition_max,
                       current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1)
                  for p, o in enumerate(offsets))
    body = make(cls, cluster_id=None, replica_id=-1, max_wait=timedelta(milliseconds=500),
                min_bytes=1, max_bytes=64 * MB, isolation_level=0, session_id=0,
                session_epoch=-1, topics=(make(tcls, topic=topic, partitions=parts),),
                forgotten_topics_data=(), rack_id="")
    return encode_request(1, 12, 7, "bench", body)


def bench_fetch(bootstrap: str, topic: str, partitions: int, per_partition: int,
                partition_max: int) -> float:
    """Read every partition from offset 0 to its end (one record per batch), one fetch in
    flight as a consumer does; MB/s of response bytes."""
    conn = Conn(bootstrap)
    offsets = [0] * partitions
    total = 0
    start = time.perf_counter()
    while min(offsets) < per_partition:
        conn.sock.sendall(fetch_frame(topic, offsets, partition_max))
        frame = conn.read_frame()
        total += len(frame)
        # Each batch holds one record, so the next offset is the number of batches returned:
        # walk the response's record sets by their batch headers.
        offsets = _next_offsets(frame, offsets)
    elapsed = time.perf_counter() - start
    conn.sock.close()
    return total / MB / elapsed


def _next_offsets(frame: memoryview, offsets: list[int]) -> list[int]:
    """Walk a Fetch v12 response by hand (no copy of the record bytes) to the next offsets."""
    out = list(offsets)
    pos = 4 + 1 + 4 + 2 + 4  # correlation id, header tags, throttle, error, session id
    ntopics, pos = read_uvarint(frame, pos)
    for _ in range(ntopics - 1):
        name_len, pos = read_uvarint(frame, pos)
        pos += name_len - 1
        nparts, pos = read_uvarint(frame, pos)
        for _ in range(nparts - 1):
            (index,) = struct.unpack_from(">i", frame, pos)
            pos += 4 + 2 + 8 + 8 + 8
            naborted, pos = read_uvarint(frame, pos)
            pos += max(naborted - 1, 0) * 17  # (pid, first offset, tags) entries
            pos += 4  # preferred read replica
            rec_len, pos = read_uvarint(frame, pos)
            end = pos + max(rec_len - 1, 0)
            last = None
            while pos + 12 <= end:
                base, length = struct.unpack_from(">qi", frame, pos)
                if pos + 12 + length > end:
                    break
                (delta,) = struct.unpack_from(">i", frame, pos + 23)
                last = base + delta
                pos += 12 + length
            pos = end
            tags, pos = read_uvarint(frame, pos)
            if last is not None:
                out[index] = last + 1
        _tags, pos = read_uvarint(frame, pos)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mb", type=int, default=256, help="MB produced (and fetched) per run")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--inflight", type=int, default=5, help="produce requests in flight")
    ap.add_argument("--partition-max-mb", type=int, default=1)
    args = ap.parse_args(argv)
    per_partition = args.mb // args.partitions

    raw_send, raw_recv, prod, fetch = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="kafkette-bench-") as tmp:
        proc = BrokerProcess(broker_config(tmp, **{"log.segment.bytes": str(1 << 30)}))
        try:
            for run in range(args.runs):
                topic = f"bench-{run}"
                create_topic(proc.bootstrap, topic, args.partitions)
                raw_send.append(raw_copy("sink", args.mb * MB))
                prod.append(bench_produce(proc.bootstrap, topic, args.partitions, args.mb, args.inflight))
                raw_recv.append(raw_copy("source", args.mb * MB))
                fetch.append(bench_fetch(proc.bootstrap, topic, args.partitions, per_partition,
                                         args.partition_max_mb * MB))
                print(f"run {run + 1}: raw send {raw_send[-1]:.0f} MB/s, produce {prod[-1]:.0f} MB/s, "
                      f"raw recv {raw_recv[-1]:.0f} MB/s, fetch {fetch[-1]:.0f} MB/s", file=sys.stderr)
        finally:
            proc.terminate()

    med = statistics.median
    print(f"produce: {med(prod):.0f} MB/s (median of {args.runs}); raw loopback copy "
          f"{med(raw_send):.0f} MB/s; ratio {med(prod) / med(raw_send):.2f}")
    print(f"fetch:   {med(fetch):.0f} MB/s (median of {args.runs}); raw loopback copy "
          f"{med(raw_recv):.0f} MB/s; ratio {med(fetch) / med(raw_recv):.2f}")


if __name__ == "__main__":
    main()
