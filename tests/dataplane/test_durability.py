"""Crash safety: SIGKILL during an acks=all produce loop, and a hand-corrupted segment tail."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kio.schema.errors import ErrorCode

from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config
from kafkette.protocol.records import build_batch, decode_records, iter_batches
from tests.dataplane.test_wire import create_topic, fetch, produce
from tests.wire import WireClient


def _read_all(bootstrap: str, topic: str) -> tuple[list, int]:
    out = []
    with WireClient(bootstrap) as w:
        offset = 0
        while True:
            part = fetch(w, topic, 0, offset, partition_max=4 << 20, max_bytes=4 << 20)
            p = part.responses[0].partitions[0]
            assert p.error_code == ErrorCode.none
            recs = [r for _, v in iter_batches(p.records) for r in decode_records(v)]
            if not recs:
                return out, p.high_watermark
            out += [r for r in recs if r.offset >= offset]
            offset = out[-1].offset + 1


def test_sigkill_during_acks_all_produce(tmp_path: Path) -> None:
    with BrokerProcess(broker_config(str(tmp_path))) as proc:
        with WireClient(proc.bootstrap) as w:
            assert create_topic(w, "crash", 1).error_code == ErrorCode.none
        acked: list[tuple[int, bytes]] = []
        failures: list[str] = []
        filler = b"x" * 20_000

        def produce_loop() -> None:
            try:
                with WireClient(proc.bootstrap, timeout=5) as w:
                    i = 0
                    while True:
                        value = b"%d:" % i + filler
                        r = produce(w, "crash", 0, build_batch([(b"k%d" % i, value)] * 3), acks=-1)
                        if r.error_code != ErrorCode.none:
                            failures.append(str(r.error_code))
                            return
                        acked.append((r.base_offset, value))
                        i += 1
            except (ConnectionError, OSError):
                return

        thread = threading.Thread(target=produce_loop, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while len(acked) < 300 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.kill()
        thread.join(10)
        assert not failures and len(acked) >= 300
        proc.start()
        records, hw = _read_all(proc.bootstrap, "crash")
        by_offset = {r.offset: r.value for r in records}
        for base, value in acked:
            assert all(by_offset.get(base + j) == value for j in range(3)), base
        assert [r.offset for r in records] == list(range(hw))  # a readable, gap-free log
        with WireClient(proc.bootstrap) as w:
            assert produce(w, "crash", 0, build_batch([(b"k", b"after")])).base_offset == hw


def test_corrupted_tail_is_truncated_on_start(kafka_broker_factory, caplog) -> None:
    broker = kafka_broker_factory()
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "tail", 1)
        for i in range(10):
            produce(w, "tail", 0, build_batch([(b"k", b"v%d" % i), (b"k", b"w%d" % i)]))
    log_dir = Path(broker.config["log.dirs"]) / "tail-0"
    broker.stop()
    # As after a crash: after a clean shutdown Kafka (and kafkette) check no CRC at all.
    (log_dir.parent / ".kafka_cleanshutdown").unlink()
    segment = log_dir / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    last = list(iter_batches(data))[-1][0]
    data[len(data) - last.size + 70] ^= 0x55  # flip a byte inside the last batch
    segment.write_bytes(bytes(data) + b"\x00\x00\x00\x00")
    broker.start()
    assert any("CRC mismatch" in r.message for r in caplog.records)
    records, hw = _read_all(broker.bootstrap, "tail")
    assert hw == 18 and [r.value for r in records] == [
        v for i in range(9) for v in (b"v%d" % i, b"w%d" % i)]
    with WireClient(broker.bootstrap) as w:
        assert produce(w, "tail", 0, build_batch([(b"k", b"new")])).base_offset == 18
