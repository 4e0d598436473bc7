"""A well-behaved group member that heartbeats and commits in a thread, timing every answer.

The hostile tests run it beside a misbehaving client: every one of its requests must be
answered without error, and none may wait longer than a moment.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from tests.wire import WireClient, entity

JOIN, SYNC, HEARTBEAT, COMMIT = 11, 14, 12, 8
TOPIC = "healthy-topic"


class HealthyClient:
    def __init__(self, bootstrap: str, timeout: float = 30) -> None:
        self.client = WireClient(bootstrap, client_id="healthy", timeout=timeout)
        self.group = f"healthy-{uuid.uuid4().hex[:8]}"
        self.max_wait = 0.0
        self.requests = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.member_id, self.generation = self._join()

    def _timed(self, api: int, version: int, **fields: object):
        started = time.monotonic()
        response = self.client.request(api, version, **fields)
        self.max_wait = max(self.max_wait, time.monotonic() - started)
        self.requests += 1
        return response

    def _join(self) -> tuple[str, int]:
        create = request_type(19, 7)
        self.client.request(19, 7, topics=(entity(
            create, "topics", name=TOPIC, num_partitions=1, replication_factor=-1,
            assignments=(), configs=()),), timeout=timedelta(seconds=5), validate_only=False)
        protocols = (entity(request_type(JOIN, 5), "protocols", name="range", metadata=b""),)
        member_id = ""
        for _ in range(2):  # v4+: the first join answers MEMBER_ID_REQUIRED with our id
            joined = self.client.request(
                JOIN, 5, group_id=self.group, session_timeout=30000, rebalance_timeout=30000,
                member_id=member_id, group_instance_id=None, protocol_type="consumer",
                protocols=protocols)
            member_id = joined.member_id
            if joined.error_code == 0:
                break
        assert joined.error_code == 0, joined
        synced = self.client.request(
            SYNC, 3, group_id=self.group, generation_id=joined.generation_id, member_id=member_id,
            group_instance_id=None, assignments=())
        assert synced.error_code == 0, synced
        return member_id, joined.generation_id

    def round(self, offset: int) -> None:
        """One heartbeat and one commit; errors are recorded."""
        beat = self._timed(HEARTBEAT, 4, group_id=self.group, generation_id=self.generation,
                           member_id=self.member_id, group_instance_id=None)
        if beat.error_code != 0:
            self.errors.append(f"heartbeat error {beat.error_code}")
        commit_type = request_type(COMMIT, 8)
        partition = make(item_type(item_type(commit_type, "topics"), "partitions"),
                         partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                         committed_metadata="")
        committed = self._timed(
            COMMIT, 8, group_id=self.group, generation_id_or_member_epoch=self.generation,
            member_id=self.member_id, group_instance_id=None,
            retention_time=timedelta(milliseconds=-1),
            topics=(entity(commit_type, "topics", name=TOPIC, partitions=(partition,)),))
        errors = [p.error_code for t in committed.topics for p in t.partitions if p.error_code]
        if errors:
            self.errors.append(f"commit errors {errors}")

    def start(self, pause: float = 0.02) -> None:
        def run() -> None:
            offset = 0
            while not self._stop.is_set():
                try:
                    self.round(offset)
                except Exception as exc:  # noqa: BLE001 - reported by stop()
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    return
                offset += 1
                self._stop.wait(pause)

        self._thread = threading.Thread(target=run, name="healthy-client", daemon=True)
        self._thread.start()

    def wait_rounds(self, rounds: int = 3, timeout: float = 10) -> None:
        """Wait until the background thread has completed ``rounds`` more rounds."""
        target = self.requests + 2 * rounds
        deadline = time.monotonic() + timeout
        while self.requests < target and not self.errors and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.requests >= target or self.errors, "the healthy client made no progress"

    def stop(self) -> None:
        """Stop the background rounds; ``errors`` and ``max_wait`` then hold the verdict."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        self.client.close()

    def __enter__(self) -> HealthyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
