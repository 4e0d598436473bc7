"""Start-up to first accepted connection.

Measures, in the same run: the interpreter floor (``python -c pass``), ``kafkette serve`` from
spawn until a first ApiVersions request is answered, and an in-process broker (the pytest fixture
path) from ``Broker.start`` to its first answered request. Run: ``python -m bench.startup``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from bench.stats import machine, summary
from kafkette.protocol.build import make
from kafkette.protocol.codec import encode_request, request_type

API_VERSIONS = encode_request(18, 0, 1, "bench", make(request_type(18, 0)))


def first_answer(host: str, port: int) -> None:
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(API_VERSIONS)
        size = int.from_bytes(sock.recv(4), "big")
        got = 0
        while got < size:
            got += len(sock.recv(size - got))


def interpreter_floor() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=CHILD_ENV)
    return time.perf_counter() - t0


# Byte-code cached as after a normal install, even where PYTHONDONTWRITEBYTECODE is set
# (this sandbox sets it, which makes every start recompile every module).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
CHILD_ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "kafkette-bench-pycache")


def process_startup(log_dir: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkette.broker", "serve", "--log-level", "WARNING",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={log_dir}"],
        stdout=subprocess.PIPE, text=True, env=CHILD_ENV,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        host, port = line.rsplit(" ", 1)[1].strip().rsplit(":", 1)
        first_answer(host, int(port))
        return time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(10)


def in_process_startup(log_dir: str) -> float:
    from kafkette.broker.server import Broker

    async def once() -> float:
        t0 = time.perf_counter()
        broker = Broker({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": log_dir})
        await broker.start()
        host, port = broker.bound
        await asyncio.to_thread(first_answer, host, port)
        elapsed = time.perf_counter() - t0
        await broker.stop()
        return elapsed

    return asyncio.run(once())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    floor, proc, inproc = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        process_startup(os.path.join(tmp, "warm"))  # warm-up (page cache, .pyc files)
        for i in range(args.runs):
            floor.append(interpreter_floor())
            proc.append(process_startup(os.path.join(tmp, f"p{i}")))
            inproc.append(in_process_startup(os.path.join(tmp, f"i{i}")))
    print(f"machine: {machine()}")
    print(f"interpreter floor (python -c pass):        {summary(floor, 'ms', 1000)}")
    print(f"kafkette serve -> first answered request:   {summary(proc, 'ms', 1000)}")
    print(f"in-process Broker.start -> first answer:    {summary(inproc, 'ms', 1000)}")
    print(f"process start-up / interpreter floor: "
          f"{statistics.median(proc) / statistics.median(floor):.2f}x")


if __name__ == "__main__":
    main()
