"""TLS against PLAINTEXT on one broker: produce MB/s with 1 MB batches, and the broker's CPU per
request for a steady stream of small requests (Heartbeats).

``python -m bench.tls [--runs 3] [--mb 128] [--requests 20000]``

kafkette runs as its own process with a PLAINTEXT and an SSL listener (a throw-away CA from
kafkette.broker.testing.certificates); this process is the client (bench/produce_fetch.py's raw
socket client, under ``ssl`` for the SSL listener). Figures are medians over ``--runs``; CPU is
the broker process's user+system time from /proc.
"""

from __future__ import annotations

import argparse
import os
import socket
import ssl
import statistics
import struct
import tempfile
from pathlib import Path

from bench.produce_fetch import Conn, create_topic, produce_over
from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config
from kafkette.broker.testing.certificates import TestCA
from kafkette.protocol.build import make
from kafkette.protocol.codec import encode_request, request_type


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _TlsConn(Conn):
    def __init__(self, bootstrap: str, context: ssl.SSLContext) -> None:
        super().__init__(bootstrap)
        self.sock = context.wrap_socket(self.sock, server_hostname="127.0.0.1")


def _heartbeats(conn: Conn, count: int, pid: int) -> float:
    """Broker CPU µs per Heartbeat (an unknown member: the answer is an error, the path is the
    connection's steady small-request path), 64 in flight."""
    body = make(request_type(12, 4), group_id="bench-tls", generation_id=1,
                member_id="nobody", group_instance_id=None)
    frame = bytearray(encode_request(12, 4, 1, "bench", body))
    before = _cpu_seconds(pid)
    sent = received = 0
    while received < count:
        while sent < count and sent - received < 64:
            struct.pack_into(">i", frame, 8, sent)
            conn.sock.sendall(frame)
            sent += 1
        conn.read_frame()
        received += 1
    return (_cpu_seconds(pid) - before) / count * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tls")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mb", type=int, default=128)
    parser.add_argument("--requests", type=int, default=20000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafkette-bench-tls-") as tmp:
        ca = TestCA(Path(tmp) / "certs")
        server = ca.issue("broker")
        ssl_port = _free_port()
        config = broker_config(str(Path(tmp) / "logs"), **{
            "listeners": f"PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{ssl_port}",
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(server.combined)})
        context = ssl.create_default_context(cafile=str(ca.cert_path))
        with BrokerProcess(config) as broker:
            assert broker.proc is not None
            pid = broker.proc.pid
            tls_bootstrap = f"127.0.0.1:{ssl_port}"
            create_topic(broker.bootstrap, "bench-tls", 4)
            results: dict[str, list[float]] = {k: [] for k in (
                "plain MB/s", "tls MB/s", "plain µs/req", "tls µs/req")}
            for _ in range(args.runs):
                results["plain MB/s"].append(
                    produce_over(Conn(broker.bootstrap), "bench-tls", 4, args.mb, 5))
                results["tls MB/s"].append(
                    produce_over(_TlsConn(tls_bootstrap, context), "bench-tls", 4, args.mb, 5))
                plain = Conn(broker.bootstrap)
                results["plain µs/req"].append(_heartbeats(plain, args.requests, pid))
                plain.sock.close()
                secure = _TlsConn(tls_bootstrap, context)
                results["tls µs/req"].append(_heartbeats(secure, args.requests, pid))
                secure.sock.close()
    for name, values in results.items():
        print(f"{name:>14}: {statistics.median(values):8.1f}  (runs: "
              f"{', '.join(f'{v:.1f}' for v in values)})")
    ratio = statistics.median(results["tls MB/s"]) / statistics.median(results["plain MB/s"])
    print(f"TLS produce throughput is {ratio:.0%} of PLAINTEXT; 1 MB batches, "
          f"{args.mb} MB a run")


if __name__ == "__main__":
    main()
