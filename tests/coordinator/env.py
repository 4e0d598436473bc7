"""Wire-level group test harness: a broker on a ManualClock and members on their own sockets."""

from __future__ import annotations

import struct
import tempfile
import time
from typing import Any

from kafkette.broker.services.offsets_log import OFFSETS_TOPIC
from kafkette.broker.testing import ThreadedBroker, test_config
from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.protocol.build import make
from kafkette.protocol.codec import request_type
from kafkette.protocol.group_records import decode_key, decode_value
from kafkette.protocol.records import decode_records
from tests.wire import WireClient, entity

JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST, COMMIT, FETCH, DELETE, OFFSET_DELETE, FIND = (
    11, 12, 13, 14, 15, 16, 8, 9, 42, 47, 10)


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0 bytes."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


RANGE = (("range", subscription("t")),)


class Env:
    def __init__(self, **overrides: Any) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="kafkette-coord-")
        self.clock = ManualClock()
        config = test_config(self.tmp.name, **{
            "offsets.topic.num.partitions": 3,
            "group.initial.rebalance.delay.ms": 3000,
            "group.min.session.timeout.ms": 6000,
            "group.max.session.timeout.ms": 1800000,
            # Virtual time jumps (advance) must not time out a write still in flight in real
            # time; tests of the write timeout set it.
            "offsets.commit.timeout.ms": 3_600_000,
        })
        config.update({k: str(v) for k, v in overrides.items()})
        self.broker = ThreadedBroker(config, clock=self.clock)
        self.members: list[Member] = []
        self._n = 0

    @property
    def coordinator(self):
        return self.broker.broker.coordinator

    def close(self) -> None:
        for m in self.members:
            m.close()
        self.broker.close()
        self.tmp.cleanup()

    def member(self, client_id: str = "c") -> Member:
        m = Member(self, client_id)
        self.members.append(m)
        return m

    def group_id(self, prefix: str = "g") -> str:
        self._n += 1
        return f"{prefix}-{self._n}-{time.monotonic_ns()}"

    def advance(self, ms: int) -> None:
        self.broker.run(self.clock.advance, ms)

    def run(self, fn: Any, *args: Any) -> Any:
        return self.broker.run(fn, *args)

    def group(self, group_id: str):
        return self.run(lambda: self.coordinator.shard_for(group_id).groups.get(group_id))

    def state(self, group_id: str) -> str | None:
        g = self.group(group_id)
        return None if g is None else g.state.value

    def create_topic(self, name: str, partitions: int = 3) -> None:
        b = self.broker.broker
        if b.logs.topic(name) is None:
            self.broker.run(b.logs.create_topic(name, partitions))

    async def drain(self) -> None:
        """Wait until every coordinator write issued so far is durable."""
        import asyncio

        await asyncio.gather(*(ctx.idle() for ctx in self.coordinator.runtime.contexts.values()))

    def raw_offsets_records(self) -> list[tuple[bytes, bytes | None]]:
        logs = self.broker.broker.logs
        out: list[tuple[bytes, bytes | None]] = []
        self.broker.run(self.drain())

        def read():
            for p in range(logs.topic(OFFSETS_TOPIC).partitions):
                for _h, data in logs.partition(OFFSETS_TOPIC, p).iter_batches(0):
                    out.extend((bytes(r.key), None if r.value is None else bytes(r.value))
                               for r in decode_records(data))
        self.broker.run(read)
        return out

    def offsets_records(self) -> list[tuple[Any, Any]]:
        """Every decoded (key, value) of __consumer_offsets, per partition in log order."""
        logs = self.broker.broker.logs
        out = []
        self.broker.run(self.drain())

        def read():
            for p in range(logs.topic(OFFSETS_TOPIC).partitions):
                for _h, data in logs.partition(OFFSETS_TOPIC, p).iter_batches(0):
                    for rec in decode_records(data):
                        key = decode_key(bytes(rec.key))
                        out.append((key, decode_value(key, None if rec.value is None else bytes(rec.value))))
        self.broker.run(read)
        return out


class Member:
    """One client connection; requests that park are sent, then collected with ``result``."""

    def __init__(self, env: Env, client_id: str) -> None:
        self.env = env
        self.client = WireClient(env.broker.bootstrap, client_id=client_id)
        self.port = self.client.sock.getsockname()[1]
        self.member_id = ""
        self.generation = -1
        self._pending: tuple[int, int] | None = None

    def close(self) -> None:
        self.client.close()

    def reconnect(self) -> None:
        self.client.close()
        self.client = WireClient(self.env.broker.bootstrap, client_id=self.client.client_id)
        self.port = self.client.sock.getsockname()[1]
        self._pending = None

    # Raw ----------------------------------------------------------------------------------------
    def send(self, api: int, version: int, **fields: Any) -> None:
        assert self._pending is None, "a request is already outstanding"
        self.client.send(api, version, make(request_type(api, version), **fields))
        self._pending = (api, version)

    def result(self) -> Any:
        assert self._pending is not None
        api, version = self._pending
        self._pending = None
        _corr, response = self.client.receive(api, version)
        return response

    def request(self, api: int, version: int, **fields: Any) -> Any:
        self.send(api, version, **fields)
        return self.result()

    def _conn(self):
        for conn in list(self.env.broker.broker.connections):
            if conn.peer.endswith(f":{self.port}"):
                return conn
        return None

    def is_parked(self) -> bool:
        """True while the broker holds this connection's request unanswered."""
        return bool(self.env.run(lambda: (c := self._conn()) is not None and c._busy))

    def wait_parked(self, timeout: float = 5) -> None:
        deadline = time.monotonic() + timeout
        while not self.is_parked():
            if time.monotonic() > deadline:
                raise AssertionError("request was not parked")
            time.sleep(0.001)

    # Group APIs --------------------------------------------------------------------------------
    def send_join(self, group: str, *, member_id: str | None = None, version: int = 9,
                  instance: str | None = None, protocols=RANGE, session: int = 10000,
                  rebalance: int = 10000, protocol_type: str = "consumer") -> None:
        cls = request_type(JOIN, version)
        protos = tuple(entity(cls, "protocols", name=n, metadata=m) for n, m in protocols)
        self.send(JOIN, version, group_id=group,
                  member_id=self.member_id if member_id is None else member_id,
                  session_timeout=session, rebalance_timeout=rebalance,
                  group_instance_id=instance, protocol_type=protocol_type, protocols=protos,
                  reason=None)

    def join_result(self) -> Any:
        r = self.result()
        self.last_join = r
        if r.error_code == 0 or r.error_code == 79:
            self.member_id = r.member_id
            self.generation = r.generation_id
        return r

    def join(self, group: str, **kw: Any) -> Any:
        self.send_join(group, **kw)
        return self.join_result()

    def join_parked(self, group: str, **kw: Any) -> None:
        self.send_join(group, **kw)
        self.wait_parked()

    def send_sync(self, group: str, *, assignments: dict[str, bytes] | None = None,
                  version: int = 5, generation: int | None = None, instance: str | None = None,
                  protocol_type: str | None = "consumer", protocol_name: str | None = "range",
                  member_id: str | None = None) -> None:
        cls = request_type(SYNC, version)
        items = tuple(entity(cls, "assignments", member_id=m, assignment=a)
                      for m, a in (assignments or {}).items())
        self.send(SYNC, version, group_id=group,
                  generation_id=self.generation if generation is None else generation,
                  member_id=self.member_id if member_id is None else member_id,
                  group_instance_id=instance, protocol_type=protocol_type,
                  protocol_name=protocol_name, assignments=items)

    def sync(self, group: str, **kw: Any) -> Any:
        self.send_sync(group, **kw)
        return self.result()

    def heartbeat(self, group: str, *, generation: int | None = None, member_id: str | None = None,
                  instance: str | None = None, version: int = 4) -> int:
        r = self.request(HEARTBEAT, version, group_id=group,
                         generation_id=self.generation if generation is None else generation,
                         member_id=self.member_id if member_id is None else member_id,
                         group_instance_id=instance)
        return r.error_code

    def leave(self, group: str, members: list[tuple[str, str | None]] | None = None,
              version: int = 5) -> Any:
        if version < 3:
            return self.request(LEAVE, version, group_id=group, member_id=self.member_id)
        cls = request_type(LEAVE, version)
        items = tuple(entity(cls, "members", member_id=m, group_instance_id=i, reason=None)
                      for m, i in (members if members is not None else [(self.member_id, None)]))
        return self.request(LEAVE, version, group_id=group, members=items)

    def commit(self, group: str, offsets: dict[tuple[str, int], Any], *, generation: int = -1,
               member_id: str = "", instance: str | None = None, version: int = 9,
               retention: int = -1) -> dict[tuple[str, int], int]:
        from datetime import timedelta

        cls = request_type(COMMIT, version)
        topic_cls = __import__("kafkette.protocol.build", fromlist=["item_type"]).item_type(cls, "topics")
        by_topic: dict[str, list] = {}
        for (topic, p), value in offsets.items():
            off, meta = value if isinstance(value, tuple) else (value, "")
            by_topic.setdefault(topic, []).append(entity(
                topic_cls, "partitions", partition_index=p, committed_offset=off,
                committed_leader_epoch=-1, committed_metadata=meta))
        topics = tuple(entity(cls, "topics", name=t, partitions=tuple(ps))
                       for t, ps in by_topic.items())
        r = self.request(COMMIT, version, group_id=group, generation_id_or_member_epoch=generation,
                         member_id=member_id, group_instance_id=instance,
                         retention_time=timedelta(milliseconds=retention), topics=topics)
        return {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}

    def fetch(self, group: str, partitions: list[tuple[str, int]] | None, *, version: int = 9,
              require_stable: bool = False) -> dict[tuple[str, int], tuple[int, int, str, int]]:
        """{(topic, partition): (offset, leader_epoch, metadata, error)}"""
        from kafkette.protocol.build import item_type

        cls = request_type(FETCH, version)
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for t, p in partitions:
                by_topic.setdefault(t, []).append(p)
            holder = item_type(cls, "groups") if version >= 8 else cls
            topics = tuple(make(item_type(holder, "topics"), name=t, partition_indexes=tuple(ps))
                           for t, ps in by_topic.items())
        if version >= 8:
            group_entity = entity(cls, "groups", group_id=group, member_id=None, member_epoch=-1,
                                  topics=topics)
            r = self.request(FETCH, version, groups=(group_entity,), require_stable=require_stable)
            assert r.groups[0].error_code == 0, r
            resp_topics = r.groups[0].topics
        else:
            r = self.request(FETCH, version, group_id=group, topics=topics,
                             require_stable=require_stable)
            resp_topics = r.topics
        return {(t.name, p.partition_index): (p.committed_offset,
                                              getattr(p, "committed_leader_epoch", -1),
                                              p.metadata, p.error_code)
                for t in resp_topics for p in t.partitions}
