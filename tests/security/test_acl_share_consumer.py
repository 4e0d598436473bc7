"""A real confluent-kafka ``ShareConsumer`` (User:ANONYMOUS on PLAINTEXT) against a broker with
the StandardAuthorizer: refused with GROUP_AUTHORIZATION_FAILED while it may not READ the group,
consuming once an ACL created through CreateAcls allows it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kafkette.protocol.records import build_batch
from tests.dataplane.test_wire import produce
from tests.share_fetch.test_wire import set_group_config
from tests.wire import WireClient

from .test_acl_wire import ADMIN, RT, STANDARD, Op, add, binding

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import KafkaError, KafkaException, ShareConsumer  # noqa: E402

GROUP, TOPIC = "workers", "jobs"


def poll_until(consumer: ShareConsumer, seconds: float, *, want_records: int = 0
               ) -> tuple[list[bytes], list[int]]:
    """Poll for up to ``seconds``: (values received, error codes seen)."""
    values: list[bytes] = []
    errors: list[int] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            msgs = consumer.poll(0.2)
        except KafkaException as exc:
            errors.append(exc.args[0].code())
            if not want_records:
                break
            continue
        for m in msgs:
            if m.error():
                errors.append(m.error().code())
            else:
                values.append(m.value())
        if want_records and len(values) >= want_records:
            break
    return values, errors


def test_share_consumer_needs_read_on_its_group(kafka_broker_factory, tmp_path: Path) -> None:
    (tmp_path / "kafkette-acls.json").write_text(json.dumps(
        {"version": 1, "acls": [acl.to_json() for acl in ADMIN]}))
    runner = kafka_broker_factory({
        "log.dirs": str(tmp_path), "authorizer.class.name": STANDARD,
        "group.share.heartbeat.interval.ms": "250", "group.share.session.timeout.ms": "3000"})
    runner.run(runner.broker.logs.create_topic(TOPIC, 1))
    with WireClient(runner.bootstrap) as w:
        add(w, binding(RT.TOPIC, TOPIC, Op.READ), binding(RT.TOPIC, TOPIC, Op.WRITE),
            binding(RT.GROUP, GROUP, Op.ALTER_CONFIGS))
        set_group_config(runner.bootstrap, GROUP, share_auto_offset_reset="earliest")
        produce(w, TOPIC, 0, build_batch([(None, b"job-%d" % i) for i in range(5)]))

        config = {"bootstrap.servers": runner.bootstrap, "group.id": GROUP}
        refused = ShareConsumer(config)
        try:
            refused.subscribe([TOPIC])
            values, errors = poll_until(refused, 20)
            assert values == []
            assert KafkaError.GROUP_AUTHORIZATION_FAILED in errors
        finally:
            refused.close()

        add(w, binding(RT.GROUP, GROUP, Op.READ))
        consumer = ShareConsumer(config)
        try:
            consumer.subscribe([TOPIC])
            values, _ = poll_until(consumer, 30, want_records=5)
            assert sorted(values) == [b"job-%d" % i for i in range(5)]
        finally:
            consumer.close()
