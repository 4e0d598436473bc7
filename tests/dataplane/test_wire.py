"""Data-plane APIs over the wire with the project codec: every Fetch version decodes,
validation errors, idempotent sequences, long-poll wake-up, ListOffsets, topic admin."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

import pytest
from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.records import build_batch, decode_records, iter_batches
from tests.wire import WireClient, entity

PRODUCE, FETCH, LIST_OFFSETS, CREATE, DELETE, DESCRIBE_CONFIGS, INIT_PID, CREATE_PARTS = (
    0, 1, 2, 19, 20, 32, 22, 37)


def create_topic(w: WireClient, name: str, partitions: int = 1, configs: dict | None = None,
                 version: int = 7, validate_only: bool = False):
    cls = request_type(CREATE, version)
    config_cls = item_type(item_type(cls, "topics"), "configs")
    topic = entity(cls, "topics", name=name, num_partitions=partitions, replication_factor=-1,
                   assignments=(), configs=tuple(make(config_cls, name=k, value=v)
                                                 for k, v in (configs or {}).items()))
    resp = w.request(CREATE, version, topics=(topic,), timeout=timedelta(seconds=5),
                     validate_only=validate_only)
    return resp.topics[0]


def produce(w: WireClient, topic: str, partition: int, records: bytes, acks: int = -1, version: int = 9):
    cls = request_type(PRODUCE, version)
    part_cls = item_type(item_type(cls, "topic_data"), "partition_data")
    tdata = entity(cls, "topic_data", name=topic,
                   partition_data=(make(part_cls, index=partition, records=records),))
    if acks == 0:
        w.send(PRODUCE, version, make(cls, transactional_id=None, acks=0,
                                      timeout=timedelta(seconds=5), topic_data=(tdata,)))
        return None
    resp = w.request(PRODUCE, version, transactional_id=None, acks=acks,
                     timeout=timedelta(seconds=5), topic_data=(tdata,))
    return resp.responses[0].partition_responses[0]


def fetch(w: WireClient, topic: str, partition: int, offset: int, version: int = 11,
          max_wait_ms: int = 0, min_bytes: int = 1, max_bytes: int = 1 << 20,
          partition_max: int = 1 << 20, topic_id: uuid.UUID | None = None):
    cls = request_type(FETCH, version)
    topic_cls = type(entity(cls, "topics", topic=topic, topic_id=topic_id, partitions=()))
    part = entity(topic_cls, "partitions", partition=partition, fetch_offset=offset,
                  partition_max_bytes=partition_max, current_leader_epoch=-1,
                  last_fetched_epoch=-1, log_start_offset=-1)
    t = entity(cls, "topics", topic=topic, topic_id=topic_id, partitions=(part,))
    resp = w.request(FETCH, version, replica_id=-1, max_wait=timedelta(milliseconds=max_wait_ms),
                     min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=0, session_id=0,
                     session_epoch=-1, topics=(t,), forgotten_topics_data=(), rack_id="",
                     cluster_id=None)
    return resp


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory()


def test_produce_then_fetch_every_version(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        info = create_topic(w, "wire", 2)
        assert info.error_code == ErrorCode.none and info.num_partitions == 2
        batches = [build_batch([(b"k%d" % i, b"v%d" % i)], base_timestamp=1000 + i, compression=i % 5)
                   for i in range(5)]
        for i, b in enumerate(batches):
            r = produce(w, "wire", 1, b)
            assert (r.error_code, r.base_offset) == (ErrorCode.none, i)
        for version in range(4, 18):
            resp = fetch(w, "wire", 1, 2, version=version, topic_id=info.topic_id)
            part = resp.responses[0].partitions[0]
            assert part.error_code == ErrorCode.none, version
            assert part.high_watermark == 5
            recs = [r for _, v in iter_batches(part.records) for r in decode_records(v)]
            assert [(r.offset, r.key, r.timestamp) for r in recs] == [
                (i, b"k%d" % i, 1000 + i) for i in range(2, 5)], version
            if version >= 13:
                assert resp.responses[0].topic_id == info.topic_id
        # The broker rewrote only the base offset (and leader epoch): bytes otherwise as sent.
        part = fetch(w, "wire", 1, 0).responses[0].partitions[0]
        stored = [bytes(v) for _, v in iter_batches(part.records)]
        assert [s[16:] for s in stored] == [b[16:] for b in batches]


def test_fetch_limits_and_errors(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "lim", 1)
        big = build_batch([(None, b"x" * 2000)])
        for _ in range(4):
            produce(w, "lim", 0, big)
        part = fetch(w, "lim", 0, 0, max_bytes=100).responses[0].partitions[0]
        assert len(list(iter_batches(part.records))) == 1  # at least one batch, even over the limit
        part = fetch(w, "lim", 0, 0, partition_max=2 * len(big)).responses[0].partitions[0]
        assert len(part.records) == 2 * len(big)
        part = fetch(w, "lim", 0, 9).responses[0].partitions[0]
        assert part.error_code == ErrorCode.offset_out_of_range
        part = fetch(w, "nope", 0, 0).responses[0].partitions[0]
        assert part.error_code == ErrorCode.unknown_topic_or_partition
        part = fetch(w, "lim", 0, 0, version=13, topic_id=uuid.uuid4()).responses[0].partitions[0]
        assert part.error_code == ErrorCode.unknown_topic_id
        part = fetch(w, "lim", 0, 4).responses[0].partitions[0]
        assert part.error_code == ErrorCode.none and part.records == b""


def test_long_poll_is_woken_by_append(broker) -> None:
    with WireClient(broker.bootstrap) as w, WireClient(broker.bootstrap) as w2:
        create_topic(w, "poll", 1)
        t0 = time.monotonic()
        resp = fetch(w, "poll", 0, 0, max_wait_ms=300)
        assert time.monotonic() - t0 >= 0.25 and resp.responses[0].partitions[0].records == b""
        timer = threading.Timer(0.2, lambda: produce(w2, "poll", 0, build_batch([(b"a", b"b")])))
        timer.start()
        t0 = time.monotonic()
        resp = fetch(w, "poll", 0, 0, max_wait_ms=10_000)
        elapsed = time.monotonic() - t0
        timer.join()
        assert 0.15 < elapsed < 5
        assert decode_records(resp.responses[0].partitions[0].records)[0].value == b"b"


def test_produce_validation(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "val", 1)
        bad = bytearray(build_batch([(b"k", b"v")]))
        bad[-1] ^= 0x01
        assert produce(w, "val", 0, bytes(bad)).error_code == ErrorCode.corrupt_message
        magic1 = bytearray(build_batch([(b"k", b"v")]))
        magic1[16] = 1  # Kafka: only magic v2 batches in Produce v3+ (INVALID_RECORD)
        assert produce(w, "val", 0, bytes(magic1)).error_code == ErrorCode.invalid_record
        two = build_batch([(b"k", b"v")]) * 2
        assert produce(w, "val", 0, two).error_code == ErrorCode.invalid_record
        assert produce(w, "val", 3, build_batch([(b"k", b"v")])).error_code == \
            ErrorCode.unknown_topic_or_partition
        assert produce(w, "missing", 0, build_batch([(b"k", b"v")])).error_code == \
            ErrorCode.unknown_topic_or_partition
        # acks=0 sends no response; the next request's answer comes back in order.
        produce(w, "val", 0, build_batch([(b"k", b"v0")]), acks=0)
        assert produce(w, "val", 0, build_batch([(b"k", b"v1")]), acks=1).base_offset == 1
        assert produce(w, "val", 0, build_batch([(b"k", b"v")]), acks=2).error_code == \
            ErrorCode.invalid_required_acks
        # A failed acks=0 produce closes the connection, as Kafka does.
        with WireClient(broker.bootstrap) as w0:
            produce(w0, "missing", 0, build_batch([(b"k", b"v")]), acks=0)
            assert w0.is_closed_by_peer()
        create_topic(w, "isr", 1, {"min.insync.replicas": "2"})
        assert produce(w, "isr", 0, build_batch([(b"k", b"v")]), acks=-1).error_code == \
            ErrorCode.not_enough_replicas
        assert produce(w, "isr", 0, build_batch([(b"k", b"v")]), acks=1).error_code == ErrorCode.none


def test_idempotent_sequences(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "idem", 1)
        pid = w.request(INIT_PID, 4, transactional_id=None, transaction_timeout=timedelta(seconds=60), producer_id=-1, producer_epoch=-1)
        assert pid.error_code == ErrorCode.none and pid.producer_id >= 0
        pid2 = w.request(INIT_PID, 4, transactional_id=None, transaction_timeout=timedelta(seconds=60), producer_id=-1, producer_epoch=-1)
        assert pid2.producer_id != pid.producer_id

        def batch(seq: int, n: int = 2, epoch: int = 0) -> bytes:
            return build_batch([(b"k", b"%d" % (seq + i)) for i in range(n)],
                               producer_id=pid.producer_id, producer_epoch=epoch, base_sequence=seq)

        assert produce(w, "idem", 0, batch(0)).base_offset == 0
        assert produce(w, "idem", 0, batch(2)).base_offset == 2
        dup = produce(w, "idem", 0, batch(0))
        assert (dup.error_code, dup.base_offset) == (ErrorCode.none, 0)
        assert produce(w, "idem", 0, batch(7)).error_code == ErrorCode.out_of_order_sequence_number
        assert produce(w, "idem", 0, batch(4)).base_offset == 4
        assert produce(w, "idem", 0, batch(0, epoch=1)).base_offset == 6  # new epoch restarts at 0
        assert produce(w, "idem", 0, batch(2, epoch=0)).error_code == ErrorCode.invalid_producer_epoch
        part = fetch(w, "idem", 0, 0).responses[0].partitions[0]
        assert part.high_watermark == 8


def test_list_offsets(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "lo", 1)
        for i in range(4):
            produce(w, "lo", 0, build_batch([(b"a", b"1"), (b"b", b"2")], base_timestamp=1000 * (i + 1)))

        def lookup(ts: int, version: int = 7):
            cls = request_type(LIST_OFFSETS, version)
            t_cls = type(entity(cls, "topics", name="lo", partitions=()))
            part = entity(t_cls, "partitions", partition_index=0, timestamp=ts, current_leader_epoch=-1)
            resp = w.request(LIST_OFFSETS, version, replica_id=-1, isolation_level=0,
                             topics=(entity(cls, "topics", name="lo", partitions=(part,)),),
                             timeout=timedelta(seconds=5))
            p = resp.topics[0].partitions[0]
            return p.error_code, p.offset, p.timestamp

        assert lookup(-1) == (ErrorCode.none, 8, -1)
        assert lookup(-2, version=1) == (ErrorCode.none, 0, -1)
        assert lookup(2500) == (ErrorCode.none, 4, 3000)
        assert lookup(1000, version=10) == (ErrorCode.none, 0, 1000)
        assert lookup(9999) == (ErrorCode.none, -1, -1)
        assert lookup(-3) == (ErrorCode.none, 6, 4000)


def test_topic_admin(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        assert create_topic(w, "adm", 2, {"cleanup.policy": "compact", "retention.ms": "1000"},
                            version=5).error_code == ErrorCode.none
        assert create_topic(w, "adm", 2).error_code == ErrorCode.topic_already_exists
        assert create_topic(w, "bad/name", 1).error_code == ErrorCode.invalid_topic_exception
        assert create_topic(w, "cfg", 1, {"no.such": "1"}).error_code == ErrorCode.invalid_config
        assert create_topic(w, "vo", 1, validate_only=True).error_code == ErrorCode.none
        assert create_topic(w, "adm2", 0, version=2).error_code == ErrorCode.invalid_partitions

        cls = request_type(DESCRIBE_CONFIGS, 4)
        res = entity(cls, "resources", resource_type=2, resource_name="adm", configuration_keys=None)
        resp = w.request(DESCRIBE_CONFIGS, 4, resources=(res,), include_synonyms=True,
                         include_documentation=False)
        configs = {c.name: c for c in resp.results[0].configs}
        assert configs["cleanup.policy"].value == "compact" and configs["cleanup.policy"].config_source == 1
        assert configs["segment.bytes"].value == "1073741824" and configs["segment.bytes"].config_source == 5
        broker_res = entity(cls, "resources", resource_type=4, resource_name="1",
                            configuration_keys=("num.partitions",))
        resp = w.request(DESCRIBE_CONFIGS, 1, resources=(broker_res,), include_synonyms=False)
        assert [(c.name, c.value) for c in resp.results[0].configs] == [("num.partitions", "1")]

        pcls = request_type(CREATE_PARTS, 3)
        grow = entity(pcls, "topics", name="adm", count=5, assignments=None)
        resp = w.request(CREATE_PARTS, 3, topics=(grow,), timeout=timedelta(seconds=5), validate_only=False)
        assert resp.results[0].error_code == ErrorCode.none
        resp = w.request(CREATE_PARTS, 0, topics=(entity(request_type(CREATE_PARTS, 0), "topics", name="adm",
                                                         count=3, assignments=None),),
                         timeout=timedelta(seconds=5), validate_only=False)
        assert resp.results[0].error_code == ErrorCode.invalid_partitions
        assert produce(w, "adm", 4, build_batch([(b"k", b"v")])).error_code == ErrorCode.none

        resp = w.request(DELETE, 4, topic_names=("adm", "ghost"), timeout=timedelta(seconds=5))
        assert [(r.name, r.error_code) for r in resp.responses] == [
            ("adm", ErrorCode.none), ("ghost", ErrorCode.unknown_topic_or_partition)]
        assert create_topic(w, "adm", 1).error_code == ErrorCode.none  # the name is free again
        assert fetch(w, "adm", 0, 0).responses[0].partitions[0].high_watermark == 0

    broker.restart()
    with WireClient(broker.bootstrap) as w:
        assert create_topic(w, "adm", 1).error_code == ErrorCode.topic_already_exists
        assert fetch(w, "adm", 0, 0).responses[0].partitions[0].error_code == ErrorCode.none


def test_log_append_time_and_internal_topics(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "lat", 1, {"message.timestamp.type": "LogAppendTime"})
        before = int(time.time() * 1000)
        r = produce(w, "lat", 0, build_batch([(b"a", b"1"), (b"b", b"2")], base_timestamp=5,
                                             compression=1))
        assert r.error_code == ErrorCode.none and r.log_append_time is not None
        append_ms = int(r.log_append_time.timestamp() * 1000)
        assert before <= append_ms <= int(time.time() * 1000) + 1
        part = fetch(w, "lat", 0, 0).responses[0].partitions[0]
        header, view = next(iter_batches(part.records))
        assert header.timestamp_type == 1 and header.max_timestamp == append_ms
        from kafkette.protocol.records import verify_crc

        assert verify_crc(view)
        assert [r.timestamp for r in decode_records(view)] == [append_ms, append_ms]
        # Clients may not write to internal topics such as __consumer_offsets.
        logs = broker.broker.logs
        if logs.topic("__consumer_offsets") is None:
            broker.run(logs.create_topic("__consumer_offsets", 1, internal=True))
        assert produce(w, "__consumer_offsets", 0, build_batch([(b"k", b"v")])).error_code == \
            ErrorCode.invalid_topic_exception


def test_offset_for_leader_epoch(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "ole", 1)
        produce(w, "ole", 0, build_batch([(b"a", b"1"), (b"b", b"2")]))
        cls = request_type(23, 4)
        t_cls = type(entity(cls, "topics", topic="ole", partitions=()))

        def ask(epoch: int, current: int = 0):
            part = entity(t_cls, "partitions", partition=0, current_leader_epoch=current,
                          leader_epoch=epoch)
            resp = w.request(23, 4, replica_id=-1,
                             topics=(entity(cls, "topics", topic="ole", partitions=(part,)),))
            p = resp.topics[0].partitions[0]
            return p.error_code, p.leader_epoch, p.end_offset

        assert ask(0) == (ErrorCode.none, 0, 2)
        assert ask(3) == (ErrorCode.none, -1, -1)
        assert ask(0, current=5)[0] == ErrorCode.unknown_leader_epoch


def test_large_fetch_spliced_from_file(broker) -> None:
    """16 MB in one response: more than a socket buffer holds, so part goes by sendfile and
    the rest through the transport; the bytes must arrive intact and in order."""
    import os

    with WireClient(broker.bootstrap) as w:
        create_topic(w, "big", 1, {"max.message.bytes": str(2 << 20)})
        sent = [build_batch([(b"k%d" % i, os.urandom(1 << 20))]) for i in range(16)]
        for b in sent:
            assert produce(w, "big", 0, b).error_code == ErrorCode.none
        part = fetch(w, "big", 0, 0, max_bytes=64 << 20, partition_max=64 << 20).responses[0].partitions[0]
        got = [bytes(v) for _, v in iter_batches(part.records)]
        assert len(got) == 16 and [g[16:] for g in got] == [s[16:] for s in sent]


def test_alter_topic_configs(broker) -> None:
    def describe(w: WireClient) -> dict[str, tuple[str, int]]:
        cls = request_type(DESCRIBE_CONFIGS, 4)
        res = entity(cls, "resources", resource_type=2, resource_name="alt", configuration_keys=None)
        resp = w.request(DESCRIBE_CONFIGS, 4, resources=(res,), include_synonyms=False,
                         include_documentation=False)
        return {c.name: (c.value, c.config_source) for c in resp.results[0].configs}

    with WireClient(broker.bootstrap) as w:
        create_topic(w, "alt", 1, {"retention.ms": "5000"})
        cls = request_type(44, 1)
        r_cls = type(entity(cls, "resources", resource_type=2, resource_name="alt", configs=()))

        def incremental(*ops, name="alt", rtype=2):
            configs = tuple(entity(r_cls, "configs", name=n, config_operation=op, value=v)
                            for n, op, v in ops)
            res = entity(cls, "resources", resource_type=rtype, resource_name=name, configs=configs)
            return w.request(44, 1, resources=(res,), validate_only=False).responses[0]

        assert incremental(("segment.bytes", 0, "2000000"), ("cleanup.policy", 2, "compact"),
                           ("retention.ms", 1, None)).error_code == ErrorCode.none
        got = describe(w)
        assert got["segment.bytes"] == ("2000000", 1)
        assert got["cleanup.policy"] == ("delete,compact", 1)
        assert got["retention.ms"] == ("604800000", 5)
        assert incremental(("retention.ms", 2, "1")).error_code == ErrorCode.invalid_config
        assert incremental(("bogus", 0, "1")).error_code == ErrorCode.invalid_config
        assert incremental(("segment.bytes", 0, "1"), name="nope").error_code == \
            ErrorCode.unknown_topic_or_partition
        assert incremental(("num.partitions", 0, "3"), name="1", rtype=4).error_code == \
            ErrorCode.invalid_request  # not a dynamic broker config
        legacy = request_type(33, 1)
        lr_cls = type(entity(legacy, "resources", resource_type=2, resource_name="alt", configs=()))
        res = entity(legacy, "resources", resource_type=2, resource_name="alt",
                     configs=(entity(lr_cls, "configs", name="retention.bytes", value="123"),))
        assert w.request(33, 1, resources=(res,), validate_only=False).responses[0].error_code == \
            ErrorCode.none
    broker.restart()
    with WireClient(broker.bootstrap) as w:
        got = describe(w)
        assert got["retention.bytes"] == ("123", 1) and got["segment.bytes"][1] == 5
        assert broker.broker.logs.partition("alt", 0).config.retention_bytes == 123


def test_delete_records(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "dr", 1, {"segment.bytes": "2000000"})
        for i in range(6):
            produce(w, "dr", 0, build_batch([(b"k", b"v%d" % i)]))
        cls = request_type(21, 2)
        t_cls = type(entity(cls, "topics", name="dr", partitions=()))

        def delete(offset: int):
            part = entity(t_cls, "partitions", partition_index=0, offset=offset)
            resp = w.request(21, 2, topics=(entity(cls, "topics", name="dr", partitions=(part,)),),
                             timeout=timedelta(seconds=5))
            p = resp.topics[0].partitions[0]
            return p.error_code, p.low_watermark

        assert delete(4) == (ErrorCode.none, 4)
        assert delete(9)[0] == ErrorCode.offset_out_of_range
        assert fetch(w, "dr", 0, 3).responses[0].partitions[0].error_code == ErrorCode.offset_out_of_range
        part = fetch(w, "dr", 0, 4).responses[0].partitions[0]
        assert part.log_start_offset == 4
        assert [r.value for r in decode_records(part.records)] == [b"v4"]
    broker.restart()
    with WireClient(broker.bootstrap) as w:
        part = fetch(w, "dr", 0, 4).responses[0].partitions[0]
        assert part.error_code == ErrorCode.none and part.log_start_offset == 4


@pytest.mark.parametrize("version", range(3, 13))
def test_produce_response_encoder_matches_kio(version: int) -> None:
    import io
    from datetime import UTC, datetime, timedelta

    from kio.serial import entity_writer

    from kafkette.protocol.build import item_type, make
    from kafkette.protocol.codec import response_type
    from kafkette.protocol.produce_response import encode_produce_response

    rows = [("topic-a", [(0, ErrorCode.none, 42, 1_700_000_000_123, 7, None),
                         (3, ErrorCode.corrupt_message, -1, -1, -1, "bad crc")]),
            ("b", [(1, ErrorCode.none, 0, -1, 0, None)])]
    cls = response_type(0, version)
    t_cls = item_type(cls, "responses")
    p_cls = item_type(t_cls, "partition_responses")
    entity = make(cls, throttle_time=timedelta(0), responses=tuple(
        make(t_cls, name=name, partition_responses=tuple(
            make(p_cls, index=i, error_code=code, base_offset=base,
                 log_append_time=None if ts < 0 else datetime.fromtimestamp(ts / 1000, UTC),
                 log_start_offset=start, record_errors=(), error_message=msg)
            for i, code, base, ts, start, msg in parts))
        for name, parts in rows))
    buf = io.BytesIO()
    entity_writer(cls)(buf, entity)
    assert encode_produce_response(version, entity) == buf.getvalue()


def test_topic_compression_type_recompresses(broker) -> None:
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "zt", 1, {"compression.type": "zstd"})
        sent = build_batch([(b"a", b"1" * 500), (None, b"2")], base_timestamp=77, compression=1)
        assert produce(w, "zt", 0, sent).error_code == ErrorCode.none
        part = fetch(w, "zt", 0, 0).responses[0].partitions[0]
        header, view = next(iter_batches(part.records))
        assert header.compression == 4
        assert [(r.offset, r.key, r.value, r.timestamp) for r in decode_records(view)] == [
            (0, b"a", b"1" * 500, 77), (1, None, b"2", 77)]


def test_compacted_topic_refuses_records_without_key(broker) -> None:
    """LogValidator.validateKey: every record of a batch to a compacted topic needs a key (an
    empty one is a key), compressed or not, wherever it is in the batch."""
    keyed = [(b"k%d" % (i % 3), b"v" * 50) for i in range(200)]
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "cmp", 1, {"cleanup.policy": "compact"})
        for codec in (0, 1, 4):
            for at in (0, 150, 199):
                records = list(keyed)
                records[at] = (None, b"v" * 50)
                part = produce(w, "cmp", 0, build_batch(records, compression=codec))
                assert part.error_code == ErrorCode.invalid_record, (codec, at)
                # RecordValidationException: Kafka's summary, and the refused record's index
                why = "Compacted topic cannot accept message without key in topic partition cmp-0."
                assert part.error_message == (
                    "One or more records have been rejected due to 1 record errors in total, and "
                    f"only showing the first three errors at most: [RecordError(batchIndex={at}, "
                    f"message='{why}')]")
                assert [(e.batch_index, e.batch_index_error_message)
                        for e in part.record_errors] == [(at, why)]
            assert produce(w, "cmp", 0, build_batch(keyed, compression=codec)).error_code == \
                ErrorCode.none
        assert produce(w, "cmp", 0, build_batch([(b"", b"empty key")])).error_code == ErrorCode.none
        part = fetch(w, "cmp", 0, 0, partition_max=1 << 22, max_bytes=1 << 22).responses[0]
        assert part.partitions[0].high_watermark == 601
