"""Burrow (and the ZooKeeper it insists on for its own locks) pointed at a kafkette broker.

Burrow reads ``__consumer_offsets`` itself and asks the broker for log-end offsets, so its lag
report checks kafkette's on-disk offset-commit records and ListOffsets, not just a client's view.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

CLUSTER = "local"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout}s")


def _wait_zookeeper(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    """ZooKeeper accepts connections before it serves sessions; 'srvr' answers once it does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"ZooKeeper exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), 0.5) as s:
                s.sendall(b"srvr")
                if b"Mode:" in s.recv(4096):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"ZooKeeper did not serve on {port} within {timeout}s")


def accepts_list_offsets_v0(bootstrap: str) -> bool:
    """Burrow 1.2.1 asks for log-end offsets with ListOffsets v0, which Kafka 4.0 removed
    (KIP-896; linkedin/Burrow#843). True when the broker answers such a request."""
    topic = b"__consumer_offsets"
    body = (struct.pack(">i", -1) + struct.pack(">i", 1) + struct.pack(">h", len(topic)) + topic
            + struct.pack(">i", 1) + struct.pack(">iqi", 0, -1, 1))
    client_id = b"burrow-probe"
    header = struct.pack(">hhih", 2, 0, 1, len(client_id)) + client_id
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), 5) as s:
        s.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        try:
            return len(s.recv(4)) == 4
        except OSError:
            return False


class Burrow:
    def __init__(self, burrow: str, zookeeper_jar: str, bootstrap: str) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="kafkette-burrow-")
        root = Path(self.dir.name)
        self.zk_port, self.http_port = free_port(), free_port()
        (root / "zk").mkdir()
        self.zk = subprocess.Popen(
            ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m",
             "-Dzookeeper.admin.enableServer=false", "-cp", zookeeper_jar,
             "org.apache.zookeeper.server.ZooKeeperServerMain", str(self.zk_port), str(root / "zk")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.proc: subprocess.Popen | None = None
        try:
            _wait_zookeeper(self.zk_port, self.zk)
            (root / "burrow.toml").write_text(self._config(root, bootstrap))
            self.log = open(root / "burrow.out", "w+")  # noqa: SIM115 - closed in close()
            self.proc = subprocess.Popen([burrow, "-config-dir", str(root)], stdout=self.log,
                                         stderr=subprocess.STDOUT)
            try:
                _wait_port(self.http_port, self.proc, "Burrow")
            except RuntimeError as exc:
                raise RuntimeError(f"{exc}; its output:\n{self.output()}") from None
        except BaseException:
            self.close()
            raise

    def _config(self, root: Path, bootstrap: str) -> str:
        # kafka-version >= 2.1.0: Burrow's Kafka client then reads record batch v2.
        return f"""
[general]
pidfile="{root}/burrow.pid"
[logging]
level="info"
[zookeeper]
servers=["127.0.0.1:{self.zk_port}"]
timeout=6
root-path="/burrow"
[client-profile.kafkette]
client-id="burrow"
kafka-version="2.1.0"
[cluster.{CLUSTER}]
class-name="kafka"
servers=["{bootstrap}"]
client-profile="kafkette"
topic-refresh=1
offset-refresh=1
[consumer.{CLUSTER}]
class-name="kafka"
cluster="{CLUSTER}"
servers=["{bootstrap}"]
client-profile="kafkette"
start-latest=false
group-blacklist="^kafkette-never-matches$"
[httpserver.default]
address="127.0.0.1:{self.http_port}"
[storage.default]
class-name="inmemory"
intervals=10
min-distance=1
"""

    def get(self, path: str) -> dict[str, Any]:
        url = f"http://127.0.0.1:{self.http_port}/v3/kafka/{CLUSTER}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:  # 404 until Burrow has seen the group
            return json.loads(exc.read() or b"{}")

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-3000:]

    def close(self) -> None:
        for proc in (self.proc, self.zk):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        if self.proc is not None:
            self.log.close()
        self.dir.cleanup()
