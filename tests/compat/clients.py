"""Drivers for every client of the matrix, each a real program in a child process.

Python clients, Java and kafkajs run the JSON-lines programs of this folder; kcat is driven by its
own flags and output. Running each client out of process keeps a crash a real crash (SIGKILL)
and lets several group members of one client run side by side.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.tools import ROOT, ensure_java_client, ensure_kafkajs, ensure_kcat

HERE = Path(__file__).resolve().parent
TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class Record:
    partition: int
    offset: int
    key: str | None
    value: str | None


class Member:
    """A running group member: its events (assigned, record, committed) as they arrive."""

    def __init__(self, name: str, args: list[str], env: dict[str, str] | None = None,
                 stderr_parser: Callable[[str], dict | None] | None = None) -> None:
        self.name = name
        self.args = args
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._cond = threading.Condition()
        self._stderr_parser = stderr_parser
        threading.Thread(target=self._pump, args=(self.proc.stdout, False), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, True), daemon=True).start()

    def _pump(self, stream: Any, is_stderr: bool) -> None:
        for line in stream:
            event: dict | None = None
            if is_stderr:
                self.stderr.append(line.rstrip())
                if self._stderr_parser is not None:
                    event = self._stderr_parser(line)
            else:
                try:
                    event = json.loads(line)
                except ValueError:
                    self.stderr.append("stdout: " + line.rstrip())
            if event is not None:
                with self._cond:
                    self.events.append(event)
                    self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    # Views ------------------------------------------------------------------------------
    def of(self, kind: str) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if e["event"] == kind]

    @property
    def assignment(self) -> list[int] | None:
        got = self.of("assigned")
        return got[-1]["partitions"] if got else None

    @property
    def records(self) -> list[Record]:
        return [Record(e["partition"], e["offset"], e.get("key"), e.get("value"))
                for e in self.of("record")]

    def wait(self, predicate: Callable[[Member], bool], what: str,
             timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not predicate(self)):
                    raise AssertionError(f"{self.name}: {what} not reached; {self.describe()}")
                self._cond.wait(min(left, 0.5))

    def describe(self) -> str:
        tail = "\n".join(self.stderr[-15:])
        return (f"exit={self.proc.poll()} assignment={self.assignment} "
                f"records={len(self.of('record'))}\nstderr tail:\n{tail}")

    # Commands ---------------------------------------------------------------------------
    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def commit(self) -> None:
        before = len(self.of("committed"))
        self.send("commit")
        self.wait(lambda m: len(m.of("committed")) > before, "commit")

    def close(self, timeout: float = TIMEOUT) -> None:
        """Leave the group cleanly."""
        if self.proc.poll() is None:
            self.send("close")
            self.proc.wait(timeout)

    def kill(self) -> None:
        """Crash: no LeaveGroup, no commit; the coordinator must expire the session."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def reap(self) -> None:
        self.kill()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


class Client:
    """A client of the matrix. ``ensure()`` gives None or the reason it is unavailable."""

    name = ""

    def ensure(self) -> str | None:
        return None

    def command(self, cmd: str, *args: str) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str] | None:
        return None

    def run(self, cmd: str, *args: str, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
        proc = subprocess.run(self.command(cmd, *args), capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT, env=self.env())
        if proc.returncode != 0:
            raise AssertionError(f"{self.name} {cmd} exited {proc.returncode}: "
                                 f"{proc.stderr[-2000:]}")
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        assert events and events[-1]["event"] == "done", f"{self.name} {cmd}: {proc.stdout[-500:]}"
        return events

    def metadata(self, bootstrap: str, topic: str) -> dict[str, Any]:
        (event,) = [e for e in self.run("metadata", bootstrap, topic) if e["event"] == "metadata"]
        return event

    def produce(self, bootstrap: str, topic: str, count: int, prefix: str,
                partitions: int) -> list[tuple[int, int]] | None:
        """(partition, offset) of each message, or None when the tool does not report them."""
        events = self.run("produce", bootstrap, topic, str(count), prefix, str(partitions))
        return [(e["partition"], e["offset"]) for e in events if e["event"] == "produced"]

    def consume(self, bootstrap: str, topic: str, count: int) -> list[Record]:
        events = self.run("consume", bootstrap, topic, str(count))
        return [Record(e["partition"], e["offset"], e["key"], e["value"])
                for e in events if e["event"] == "record"]

    def member(self, bootstrap: str, topic: str, group: str, session_ms: int,
               *protocol: str) -> Member:
        """``protocol``: nothing (classic) or "consumer" (KIP-848, Java only today)."""
        return Member(self.name, self.command("member", bootstrap, topic, group, str(session_ms),
                                              *protocol), env=self.env())


class PythonClient(Client):
    def __init__(self, name: str) -> None:
        self.name = name

    def command(self, cmd: str, *args: str) -> list[str]:
        return [sys.executable, "-m", "tests.compat.programs.pyclient", self.name, cmd, *args]

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


class JavaClient(Client):
    name = "java"
    JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k", "-Xmx256m",
                 "-Xshare:auto")

    def __init__(self) -> None:
        self.classpath: str | None = None

    def ensure(self) -> str | None:
        self.classpath, reason = ensure_java_client()
        return None if self.classpath else reason

    def command(self, cmd: str, *args: str) -> list[str]:
        assert self.classpath, "ensure() first"
        return ["java", *self.JVM_FLAGS, "-cp", self.classpath, "KafketteClient", cmd, *args]


class KafkajsClient(Client):
    name = "kafkajs"

    def __init__(self) -> None:
        self.modules: str | None = None

    def ensure(self) -> str | None:
        self.modules, reason = ensure_kafkajs()
        return None if self.modules else reason

    def command(self, cmd: str, *args: str) -> list[str]:
        return ["node", str(HERE / "node" / "client.js"), cmd, *args]

    def env(self) -> dict[str, str]:
        assert self.modules, "ensure() first"
        return {**os.environ, "NODE_PATH": self.modules}


_KCAT_ASSIGNED = re.compile(r"rebalanced \(memberid [^)]*\): assigned: (.*)$")
_KCAT_REVOKED = re.compile(r"rebalanced \(memberid [^)]*\): revoked:")
_KCAT_PART = re.compile(r"\[(\d+)\]")


def _kcat_stderr(line: str) -> dict | None:
    """kcat -G reports rebalances on stderr: '% Group g rebalanced (memberid m): assigned: t [0]'."""
    match = _KCAT_ASSIGNED.search(line)
    if match:
        return {"event": "assigned",
                "partitions": sorted(int(p) for p in _KCAT_PART.findall(match.group(1)))}
    return None


class KcatMember(Member):
    """kcat -G: auto-commit every 100 ms (kcat has no commit command); SIGTERM leaves the group."""

    def _pump(self, stream: Any, is_stderr: bool) -> None:
        if is_stderr:
            return super()._pump(stream, True)
        for line in stream:
            try:
                msg = json.loads(line)
            except ValueError:
                self.stderr.append("stdout: " + line.rstrip())
                continue
            event = {"event": "record", "partition": msg["partition"], "offset": msg["offset"],
                     "key": msg.get("key"), "value": msg.get("payload")}
            with self._cond:
                self.events.append(event)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def commit(self) -> None:
        # Offsets of delivered messages are stored and auto-committed within 100 ms; the
        # close that follows in every scenario commits whatever is still pending.
        time.sleep(0.5)
        positions: dict[int, int] = {}
        for r in self.records:
            positions[r.partition] = max(positions.get(r.partition, 0), r.offset + 1)
        with self._cond:
            self.events.append({"event": "committed", "offsets": positions})

    def close(self, timeout: float = TIMEOUT) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)


class KcatClient(Client):
    name = "kcat"

    def __init__(self) -> None:
        self.path: str | None = None

    def ensure(self) -> str | None:
        self.path, reason = ensure_kcat()
        return None if self.path else reason

    def _kcat(self, *args: str, stdin: str | None = None) -> str:
        assert self.path, "ensure() first"
        proc = subprocess.run([self.path, *args], input=stdin, capture_output=True, text=True,
                              timeout=TIMEOUT)
        if proc.returncode != 0:
            raise AssertionError(f"kcat {' '.join(args)} exited {proc.returncode}: "
                                 f"{proc.stderr[-2000:]}")
        return proc.stdout

    def metadata(self, bootstrap: str, topic: str) -> dict[str, Any]:
        md = json.loads(self._kcat("-b", bootstrap, "-L", "-J", "-t", topic))
        (entry,) = [t for t in md["topics"] if t["topic"] == topic]
        brokers = [[b["id"], *b["name"].rsplit(":", 1)] for b in md["brokers"]]
        return {"partitions": len(entry["partitions"]),
                "brokers": [[i, h, int(p)] for i, h, p in brokers]}

    def produce(self, bootstrap: str, topic: str, count: int, prefix: str,
                partitions: int) -> list[tuple[int, int]] | None:
        for p in range(partitions):
            lines = [f"{prefix}-{i}:{prefix}-{i}" for i in range(p, count, partitions)]
            self._kcat("-b", bootstrap, "-P", "-t", topic, "-p", str(p), "-K", ":",
                       "-X", "acks=all", stdin="\n".join(lines) + "\n")
        return None

    def consume(self, bootstrap: str, topic: str, count: int) -> list[Record]:
        out = self._kcat("-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-c", str(count),
                         "-J", "-e")
        msgs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        return [Record(m["partition"], m["offset"], m.get("key"), m.get("payload")) for m in msgs]

    def member(self, bootstrap: str, topic: str, group: str, session_ms: int) -> Member:
        assert self.path, "ensure() first"
        args = [self.path, "-b", bootstrap, "-G", group, topic, "-J", "-u",
                "-X", f"session.timeout.ms={session_ms}",
                "-X", f"heartbeat.interval.ms={max(session_ms // 5, 50)}",
                "-X", "max.poll.interval.ms=10000",
                "-X", "auto.offset.reset=earliest",
                "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100",
                "-X", f"client.id=kcat-{group}"]
        return KcatMember("kcat", args, stderr_parser=_kcat_stderr)


def all_clients() -> list[Client]:
    return [PythonClient("aiokafka"), PythonClient("kafka-python"),
            PythonClient("confluent-kafka"), KcatClient(), JavaClient(), KafkajsClient()]


CLIENT_NAMES = [c.name for c in all_clients()]


def client_named(name: str) -> Client:
    return next(c for c in all_clients() if c.name == name)
