"""Running kafkette from tests: in a background thread, or as a separate process.

The pytest plugin on top of these is ``kafkette.broker.testing``.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ..config_def import CONFIG_KEYS
from ..dev_preset import dev_settings

if TYPE_CHECKING:  # imported when a broker starts: the pytest plugin imports this module
    from ..server import Broker

# Test brokers: a free port, the development preset (broker/dev_preset.py: no initial rebalance
# delay, short group heartbeats and sessions), and the shortest coordinator write linger.
TEST_DEFAULTS: dict[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:0",
    **dev_settings(CONFIG_KEYS.__contains__),
    "group.coordinator.append.linger.ms": "1",
}


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


class ThreadedBroker:
    """A Broker running on its own event loop in a daemon thread."""

    def __init__(self, config: Mapping[str, Any], clock: Any | None = None, *,
                 nodes: int = 1) -> None:
        self.config = dict(config)
        self.clock = clock
        self.nodes = nodes
        self.loop = _new_loop()
        self._thread = threading.Thread(target=self._run, name="kafkette-broker", daemon=True)
        self.broker: Broker | None = None
        from ..cluster.faults import FaultRegistry

        self.fault_registry = FaultRegistry()  # kept across stop()/start()
        self._node_ports: dict[tuple[int, str], int] = {}  # ports of nodes 2..N, kept too
        self._thread.start()
        self.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro_or_fn: Any, *args: Any, timeout: float = 30) -> Any:
        """Run a coroutine, or a plain callable, on the broker's loop and return its result."""
        if asyncio.iscoroutine(coro_or_fn):
            return asyncio.run_coroutine_threadsafe(coro_or_fn, self.loop).result(timeout)
        fut: Future = Future()

        def call() -> None:
            try:
                fut.set_result(coro_or_fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                fut.set_exception(exc)

        self.loop.call_soon_threadsafe(call)
        return fut.result(timeout)

    def start(self) -> None:
        from ..server import Broker

        async def boot() -> Broker:
            broker = Broker(self.config, clock=self.clock, faults=self.fault_registry,
                            nodes=self.nodes, node_ports=self._node_ports)
            await broker.start()
            await broker.wait_ready()
            return broker

        self.broker = self.run(boot())

    def stop(self) -> None:
        """Stop; a later ``start()`` listens on the same addresses (ports picked at the first start
        are kept) and the same log.dirs."""
        if self.broker is not None:
            self.config["listeners"] = ",".join(
                f"{view.listener.name}://{view.bound[0]}:{view.bound[1]}"
                for view in self.broker.views if view.node_id == self.broker.node_ids[0])
            self._node_ports = {(view.node_id, view.listener.name): view.bound[1]
                                for view in self.broker.views}
            self.run(self.broker.stop())
            self.broker = None

    def restart(self, **overrides: Any) -> None:
        """Stop and start again on the same port and log.dirs (a clean restart)."""
        self.stop()
        self.config.update({k: str(v) for k, v in overrides.items()})
        self.start()

    # Fault injection (broker/cluster/faults.py) ---------------------------------------------------
    def inject(self, api: str | int, error: str | int | None = None, count: int = 1, *,
               delay_ms: int = 0, drop: bool = False, throttle_ms: int = 0,
               node: int | None = None) -> dict[str, Any]:
        """Fault the next ``count`` requests of ``api`` (-1: until cleared): answer ``error``
        (a Kafka error name or code), hold the answer ``delay_ms``, close the connection
        (``drop``), or set throttle_time_ms. Returns the fault as listed by ``faults()``."""
        fault = self.run(lambda: self.fault_registry.add(
            api, error, count=count, delay_ms=delay_ms, drop=drop, throttle_ms=throttle_ms,
            node=node))
        return fault.to_json()

    def faults(self) -> list[dict[str, Any]]:
        """The faults not yet used up."""
        return self.run(self.fault_registry.list)

    def clear_faults(self) -> int:
        """Remove every fault; returns how many there were."""
        return self.run(self.fault_registry.clear)

    # Several nodes (Broker(nodes=N), broker/cluster/node_control.py) --------------------------------
    def cluster(self) -> dict[str, Any]:
        """{"cluster_id", "controller", "nodes": [{"id", "host", "port", "state"}]}"""
        assert self.broker is not None
        return self.run(self.broker.control.describe)

    def stop_node(self, node_id: int) -> None:
        assert self.broker is not None
        self.run(self.broker.control.stop_node(node_id))

    def start_node(self, node_id: int) -> None:
        assert self.broker is not None
        self.run(self.broker.control.start_node(node_id))

    def move_coordinator(self, group_id: str, node_id: int) -> None:
        assert self.broker is not None
        self.run(self.broker.control.move_coordinator(group_id, node_id))

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        assert self.broker is not None
        self.run(self.broker.control.move_leader(topic, partition, node_id))

    def close(self) -> None:
        self.stop()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    @property
    def address(self) -> tuple[str, int]:
        assert self.broker is not None
        return self.broker.bound

    @property
    def bootstrap(self) -> str:
        assert self.broker is not None
        return self.broker.bootstrap

    def __enter__(self) -> ThreadedBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        data += chunk
    return data


class BrokerProcess:
    """``kafkette serve`` in a child process (for SIGKILL and restart tests)."""

    _BOUND = re.compile(r"kafkette listening on ([\w.:-]+):(\d+)")

    def __init__(self, config: Mapping[str, Any], *, preexec_fn: Callable[[], None] | None = None,
                 stderr: Any = None) -> None:
        """``preexec_fn`` runs in the child before exec (e.g. an address-space limit);
        ``stderr`` receives the broker's log (default: this process's stderr)."""
        self.config = {k: str(v) for k, v in config.items()}
        self._preexec_fn = preexec_fn
        self._stderr = stderr
        self.proc: subprocess.Popen | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.start()

    def start(self, timeout: float = 20) -> None:
        args = [sys.executable, "-m", "kafkette.broker", "serve"]
        for key, value in self.config.items():
            args += ["--override", f"{key}={value}"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                     preexec_fn=self._preexec_fn)  # noqa: PLW1509
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        match = self._BOUND.search(line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"kafkette did not start: {line!r}")
        self.host, self.port = match.group(1), int(match.group(2))
        # Keep the same port on restart (the first listener's; the others are kept as given).
        others = [item for item in self.config.get("listeners", "").split(",")[1:] if item]
        self.config["listeners"] = ",".join([f"PLAINTEXT://{self.host}:{self.port}", *others])
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        """Wait until ListGroups answers NONE: ``__consumer_offsets`` exists and is loaded."""
        from kafkette.protocol.build import make
        from kafkette.protocol.codec import decode_response, encode_request, request_type

        request = encode_request(16, 3, 1, "kafkette-ready", make(request_type(16, 3)))
        deadline = time.monotonic() + timeout
        while True:
            with socket.create_connection((self.host, self.port), timeout=timeout) as sock:
                sock.sendall(request)
                size = struct.unpack(">i", _recv_exact(sock, 4))[0]
                _, response = decode_response(16, 3, _recv_exact(sock, size))
            if response.error_code == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"kafkette not ready: ListGroups error {response.error_code}")
            time.sleep(0.02)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)

    def restart(self) -> None:
        self.terminate()
        self.start()

    def __enter__(self) -> BrokerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def dotted_keys(overrides: Mapping[str, Any]) -> dict[str, str]:
    """``num_partitions=3`` -> ``{"num.partitions": "3"}`` (keys with a dot are kept)."""
    return {k.replace("_", ".") if "." not in k else k: str(v) for k, v in overrides.items()}


def test_config(log_dir: str, **overrides: Any) -> dict[str, str]:
    config = dict(TEST_DEFAULTS)
    config["log.dirs"] = log_dir
    config.update(dotted_keys(overrides))
    return config
