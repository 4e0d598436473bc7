"""Request/response rate of the connection layer (ApiVersions, no storage or coordinator work).

A separate client process keeps ``--depth`` requests in flight on each of ``--connections``
sockets; the same client against a trivial asyncio echo-style responder gives the baseline of
what the loop and the sockets allow. Run: ``python -m bench.requests``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import socket
import statistics
import struct
import time

from bench.stats import machine, summary
from kafkette.protocol.build import make
from kafkette.protocol.codec import encode_request, request_type


def client(host: str, port: int, connections: int, depth: int, seconds: float, out) -> None:
    request = encode_request(18, 2, 1, "bench", make(request_type(18, 2)))
    socks = [socket.create_connection((host, port)) for _ in range(connections)]
    for s in socks:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(request * depth)
    done = 0
    bufs = [b""] * connections
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for i, s in enumerate(socks):
            data = bufs[i] + s.recv(1 << 16)
            n = 0
            pos = 0
            while len(data) - pos >= 4:
                (size,) = struct.unpack_from(">i", data, pos)
                if len(data) - pos - 4 < size:
                    break
                pos += 4 + size
                n += 1
            bufs[i] = data[pos:]
            if n:
                s.sendall(request * n)
                done += n
    out.put(done / seconds)


class Echo(asyncio.Protocol):
    """Baseline: answers each frame with a fixed small frame, no decoding."""

    def connection_made(self, transport):
        self.t = transport
        self.buf = b""

    def data_received(self, data):
        self.buf += data
        n = 0
        pos = 0
        while len(self.buf) - pos >= 4:
            (size,) = struct.unpack_from(">i", self.buf, pos)
            if len(self.buf) - pos - 4 < size:
                break
            pos += 4 + size
            n += 1
        self.buf = self.buf[pos:]
        self.t.write(b"\x00\x00\x00\x08\x00\x00\x00\x01\x00\x00\x00\x00" * n)


def serve(kind: str, ready, stop) -> None:
    from kafkette.broker.cli.loop import run

    async def main() -> None:
        if kind == "kafkette":
            from kafkette.broker.server import Broker

            broker = Broker({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": "/tmp/kafkette-bench"})
            await broker.start()
            ready.put(broker.bound[1])
        else:
            server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", 0)
            ready.put(server.sockets[0].getsockname()[1])
        while not stop.is_set():
            await asyncio.sleep(0.1)

    run(main())


def measure(kind: str, args) -> float:
    ctx = mp.get_context("spawn")
    ready, stop, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    server = ctx.Process(target=serve, args=(kind, ready, stop))
    server.start()
    port = ready.get(timeout=30)
    c = ctx.Process(target=client, args=("127.0.0.1", port, args.connections, args.depth,
                                         args.seconds, out))
    c.start()
    rate = out.get(timeout=60)
    c.join()
    stop.set()
    server.join(10)
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    ours, base = [], []
    measure("kafkette", args)  # warm-up
    for _ in range(args.runs):
        ours.append(measure("kafkette", args))
        base.append(measure("baseline", args))
    print(f"machine: {machine()}; {args.connections} connections x {args.depth} in flight")
    print(f"kafkette ApiVersions v2:   {summary(ours, 'req/s')}")
    print(f"baseline (no decoding):    {summary(base, 'req/s')}")
    print(f"ratio: {statistics.median(ours) / statistics.median(base):.2f}")


if __name__ == "__main__":
    main()
