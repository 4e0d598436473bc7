"""The I/O floor of the scaling rebalance: what a uvloop server with no protocol logic at all
spends on the same pattern of requests.

``python -m bench.figures.rebalance_floor SIZE`` serves on a free loopback port (printed on its
first line) for rounds of SIZE − 1 connections, each sending, one after the other and waiting for
each answer: a request answered at once (the heartbeat that learns of the rebalance), a request
answered only once all SIZE − 1 of its kind have arrived (JoinGroup; the first connection's answer
is as long as a leader's member list), and another such (SyncGroup). Requests and answers are
fixed bytes of about the sizes of kafkette's; nothing is decoded beyond the frame's size and a
kind byte. ``floor(size, rounds)`` drives it from this process and returns the median seconds
and the mean server CPU seconds of a round.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import struct
import subprocess
import sys
import time

from bench.figures.loadgen import process_cpu_seconds

_SIZE = struct.Struct(">i")
MEMBER_BYTES = 80  # a leader's JoinGroup answer: about this much per member
# (kind, request size, answer size) of the three requests of one member's round
STEPS = ((b"H", 70, 14), (b"J", 160, 110), (b"S", 120, 40))
_ANSWER = {kind: answer for kind, _request, answer in STEPS}


def _serve(size: int) -> None:
    import uvloop

    members = size - 1
    parked: dict[bytes, list[asyncio.Transport]] = {b"J": [], b"S": []}

    class Conn(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport: asyncio.Transport = transport  # type: ignore[assignment]
            transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP,
                                                          socket.TCP_NODELAY, 1)
            self.buf = b""

        def data_received(self, data: bytes) -> None:
            self.buf += data
            while len(self.buf) >= 5:
                (n,) = _SIZE.unpack_from(self.buf)
                if len(self.buf) < 4 + n:
                    return
                kind, self.buf = self.buf[4:5], self.buf[4 + n:]
                if kind == b"H":
                    self.transport.write(_SIZE.pack(_ANSWER[kind]) + bytes(_ANSWER[kind]))
                    continue
                waiting = parked[kind]
                waiting.append(self.transport)
                if len(waiting) == members:
                    for i, transport in enumerate(waiting):
                        answer = (MEMBER_BYTES * members if kind == b"J" and i == 0
                                  else _ANSWER[kind])
                        transport.write(_SIZE.pack(answer) + bytes(answer))
                    waiting.clear()

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Conn, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Event().wait()

    uvloop.run(main())


async def _rounds(port: int, size: int, rounds: int, pid: int) -> list[tuple[float, float]]:
    conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(size - 1)]

    async def member(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for kind, request, _answer in STEPS:
            writer.write(_SIZE.pack(request) + kind + bytes(request - 1))
            (n,) = _SIZE.unpack(await reader.readexactly(4))
            await reader.readexactly(n)

    out = []
    try:
        for i in range(rounds + 1):
            cpu0, t0 = process_cpu_seconds(pid), time.perf_counter()
            await asyncio.gather(*(member(r, w) for r, w in conns))
            if i:  # the first round warms up
                out.append((time.perf_counter() - t0, process_cpu_seconds(pid) - cpu0))
    finally:
        for _r, w in conns:
            w.close()
    return out


def floor(size: int, rounds: int) -> tuple[float, float]:
    """(median seconds, mean server CPU seconds) of a round (see the module docstring)."""
    server = subprocess.Popen([sys.executable, "-m", "bench.figures.rebalance_floor", str(size)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        results = asyncio.run(_rounds(port, size, rounds, server.pid))
    finally:
        server.kill()
        server.wait()
    return (statistics.median(t for t, _ in results),
            statistics.fmean(c for _, c in results))


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
