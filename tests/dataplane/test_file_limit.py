"""Running out of file descriptors: one clear line, and the broker still restarts.

Every segment file a partition wrote or read stays open; a restart opens only the active
segment of each partition (an older one is opened when it is first read). Here the broker runs
with ``ulimit -n`` 300 and one topic gets ~400 tiny segments (Kafka's internal.segment.bytes):
appending past the limit answers KAFKA_STORAGE_ERROR and logs one line naming the limit, a
restart becomes ready and serves the records, and a fetch of an old segment works.
"""

from __future__ import annotations

import resource
import tempfile
from pathlib import Path

from kio.schema.errors import ErrorCode

from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config
from kafkette.protocol.records import build_batch
from tests.dataplane.test_disk_full import read_values
from tests.dataplane.test_wire import create_topic, produce
from tests.wire import WireClient

FILE_LIMIT = 300


def _low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


def test_out_of_file_descriptors_is_one_line_and_restart_works():
    with tempfile.TemporaryDirectory(prefix="kafkette-nofile-") as tmp:
        config = broker_config(tmp, **{"offsets.topic.num.partitions": 5})
        log_path = Path(tmp) / "broker.log"
        with log_path.open("w") as log, \
                BrokerProcess(config, preexec_fn=_low_file_limit, stderr=log) as proc:
            acked: list[tuple[int, bytes]] = []
            failed = 0
            with WireClient(proc.bootstrap) as w:
                assert create_topic(w, "tiny", 1, {"internal.segment.bytes": "100"}
                                    ).error_code == ErrorCode.none
                for i in range(400):
                    value = b"value-%03d" % i
                    part = produce(w, "tiny", 0, build_batch([(b"k", value)]))
                    if part.error_code == ErrorCode.none:
                        acked.append((part.base_offset, value))
                    else:
                        assert part.error_code == ErrorCode.kafka_storage_error
                        failed += 1
                assert failed > 0 and len(acked) > 200
            proc.restart()  # ready (ListGroups answers) or this raises
            with WireClient(proc.bootstrap) as w:
                assert read_values(w, "tiny")[:1] == acked[:1]
                part = produce(w, "tiny", 0, build_batch([(b"k", b"after")]))
                assert part.error_code == ErrorCode.none
        text = log_path.read_text()
        lines = [line for line in text.splitlines() if "open files" in line.lower()]
        assert lines, text[-3000:]
        assert all(str(FILE_LIMIT) in line and "ulimit -n" in line for line in lines), lines
        assert len(lines) <= 4, lines  # one per event, not one per failed write
        assert "Traceback" not in text, text[-5000:]
