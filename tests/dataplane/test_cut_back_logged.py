"""Whatever a restart cuts off a log is one log line naming the partition, the offsets and why.

After a clean stop, a damaged tail of ``__consumer_offsets`` (a torn last batch, a flipped byte)
made the last commit silently roll back (100 -> 99). The cut is Kafka's behaviour too; silence
is not: the line names the partition, the offsets lost and the reason.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path

import pytest

from kafkette.coordinator.runtime.partitioning import partition_for
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from tests.dataplane.test_wire import create_topic
from tests.wire import WireClient, entity

GROUP, TOPIC = "cut-back", "t"


def commit(w: WireClient, offset: int) -> None:
    cls = request_type(8, 8)
    partition = make(item_type(item_type(cls, "topics"), "partitions"), partition_index=0,
                     committed_offset=offset, committed_leader_epoch=-1, committed_metadata="")
    r = w.request(8, 8, group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
                  group_instance_id=None, retention_time=timedelta(milliseconds=-1),
                  topics=(entity(cls, "topics", name=TOPIC, partitions=(partition,)),))
    assert r.topics[0].partitions[0].error_code == 0


def committed(w: WireClient) -> int:
    cls = request_type(9, 8)
    group = entity(cls, "groups", group_id=GROUP, member_id=None, member_epoch=-1,
                   topics=(make(item_type(item_type(cls, "groups"), "topics"), name=TOPIC,
                                partition_indexes=(0,)),))
    r = w.request(9, 8, groups=(group,), require_stable=False)
    return r.groups[0].topics[0].partitions[0].committed_offset


@pytest.mark.parametrize(("damage", "left"), [("torn", 99), ("garbage", 100)])
def test_a_cut_tail_of_consumer_offsets_is_logged(kafka_broker_factory, caplog, damage, left):
    broker = kafka_broker_factory(**{"offsets.topic.num.partitions": 1})
    with WireClient(broker.bootstrap) as w:
        assert create_topic(w, TOPIC, 1).error_code == 0
        for offset in range(1, 101):
            commit(w, offset)
        assert committed(w) == 100
    broker.stop()
    assert partition_for(GROUP, 1) == 0
    segment = sorted(Path(broker.config["log.dirs"], "__consumer_offsets-0").glob("*.log"))[-1]
    size = segment.stat().st_size
    with open(segment, "r+b") as f:
        if damage == "torn":  # the last batch (the 100th commit, offset 99) loses its end
            f.truncate(size - 5)
        else:  # bytes after the last batch that are no batch
            f.seek(size)
            f.write(b"\x00\x01" * 20)
        os.fsync(f.fileno())
    caplog.clear()
    caplog.set_level(logging.INFO)
    broker.start()
    with WireClient(broker.bootstrap) as w:
        assert committed(w) == left  # Kafka drops a damaged last batch too
    lines = [r.getMessage() for r in caplog.records
             if "__consumer_offsets-0" in r.getMessage() and r.levelno >= logging.WARNING]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]
    assert f"offsets from {left} on are cut" in lines[0], lines
