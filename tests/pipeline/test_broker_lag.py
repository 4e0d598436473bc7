"""End to end: a real kafkette, real clients, then the lag job on the broker's log.dirs.

Workload (topic ``orders``, 2 partitions, group ``billing``), with the lag and generation each
commit must show:

1. produce 50 records to each partition; consumer A joins (generation 1) and commits p0=30,
   p1=20                                      -> lags 20 and 30 at generation 1
2. produce 10 more to p0; A commits p0=50     -> lag 10 (log end 60)
3. consumer B joins: rebalance to generation 2 (A, B); each commits its partition at the end
                                              -> p0=60, p1=50: lag 0 and 0 at generation 2
4. A stops (LeaveGroup): generation 3 with B alone (both partitions); produce 5 to p1,
   B pauses p1 and commits p1=52              -> lag 3 at generation 3 (log end 55)
5. B stops: the group is Empty (generation 4)
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

# Skipped, not failed, without the pipeline extra (pip install -e '.[test]' only).
pd = pytest.importorskip("pandas", reason="needs the pipeline extra: pip install -e '.[test,pipeline]'")
pytest.importorskip("pyspark", reason="needs the pipeline extra: pip install -e '.[test,pipeline]'")
aiokafka = pytest.importorskip("aiokafka")

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402

from kafkette.broker.cli import main as cli_main  # noqa: E402
from tests.pipeline import test_share_lag as share_lag  # noqa: E402

TOPIC, GROUP = "orders", "billing"
P0, P1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)


def _consumer(bootstrap: str, client_id: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        TOPIC, bootstrap_servers=bootstrap, group_id=GROUP, client_id=client_id,
        enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=6000,
        heartbeat_interval_ms=100, retry_backoff_ms=50)


async def _produce(producer: AIOKafkaProducer, partition: int, n: int) -> None:
    futures = [await producer.send(TOPIC, b"order-%d" % i, key=b"k%d" % i, partition=partition)
               for i in range(n)]
    await producer.flush()
    for f in futures:
        await f
    # Records and commits are matched by timestamp: keep them in distinct milliseconds.
    await asyncio.sleep(0.02)


async def _until(predicate, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def _commit(consumer: AIOKafkaConsumer, offsets: dict) -> None:
    await consumer.commit(offsets)
    await asyncio.sleep(0.02)


async def workload(bootstrap: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        await _produce(producer, 0, 50)
        await _produce(producer, 1, 50)
        a = _consumer(bootstrap, "billing-a")
        await a.start()
        await _until(lambda: a.assignment() == {P0, P1}, "A to own both partitions")
        await _commit(a, {P0: 30, P1: 20})
        await _produce(producer, 0, 10)
        await _commit(a, {P0: 50})

        b = _consumer(bootstrap, "billing-b")
        await b.start()
        # A rejoins from its background heartbeat; poll so it also runs its rebalance callbacks.
        poll = asyncio.ensure_future(_poll_forever(a))
        await _until(lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1
                     and a.assignment() | b.assignment() == {P0, P1}, "A and B to split")
        poll.cancel()
        for c in (a, b):
            (tp,) = c.assignment()
            await _commit(c, {tp: 60 if tp == P0 else 50})

        await a.stop()  # LeaveGroup -> rebalance without A
        poll = asyncio.ensure_future(_poll_forever(b))
        await _until(lambda: b.assignment() == {P0, P1}, "B to own both partitions")
        poll.cancel()
        b.pause(P1)
        await _produce(producer, 1, 5)
        await _commit(b, {P1: 52})
        await b.stop()
    finally:
        await producer.stop()


async def _poll_forever(consumer: AIOKafkaConsumer) -> None:
    while True:
        await consumer.getmany(timeout_ms=50)


def _table(out: str, name: str) -> pd.DataFrame:
    return pd.read_parquet(os.path.join(out, f"{name}.parquet"))


def test_lag_and_generations_from_a_real_broker(spark: object, kafka_broker_factory: object,
                                                 tmp_path: object) -> None:
    broker = kafka_broker_factory(config={"num.partitions": "2", **share_lag.SHARE_CONFIG})
    asyncio.run(asyncio.wait_for(workload(broker.bootstrap), 90))
    share_lag.share_workload(broker)  # a share group on another topic, for the same lag job
    log_dirs = broker.config["log.dirs"]
    broker.stop()  # the job reads files; stopping first flushes and closes them

    out = str(tmp_path / "out")
    # The installed `kafkette` command's code path; it reuses the test's Spark session.
    assert cli_main.main(["pipeline", "lag", "--log-dirs", log_dirs, "--out", out,
                     "--master", "local[2]"]) == 0

    lag = _table(out, "lag").sort_values(["log_partition", "log_offset"])
    got = [(r.partition, r.committed_offset, r.log_end_offset, r.lag, r.generation)
           for r in lag.itertuples() if r.group == GROUP]
    assert len(got) == 6
    # A and B each commit their own partition at generation 2, in assignment-dependent order.
    assert sorted(got[3:5]) == [(0, 60, 60, 0, 2), (1, 50, 50, 0, 2)]
    assert got[:3] == [(0, 30, 50, 20, 1), (1, 20, 50, 30, 1), (0, 50, 60, 10, 1)]
    assert got[5:] == [(1, 52, 55, 3, 3)]

    current = _table(out, "current_lag").sort_values("partition")
    assert [(r.partition, r.committed_offset, r.log_end_offset, r.lag)
            for r in current.itertuples()] == [(0, 60, 60, 0), (1, 52, 55, 3)]

    ends = _table(out, "log_end_offsets").sort_values("partition")
    assert [(r.topic, r.partition, r.log_start_offset, r.log_end_offset, r.records)
            for r in ends.itertuples() if r.topic == TOPIC] == [(TOPIC, 0, 0, 60, 60),
                                                                (TOPIC, 1, 0, 55, 55)]

    reb = _table(out, "rebalances").sort_values(["log_partition", "log_offset"])
    reb = reb[reb.group == GROUP]
    history = [(r.generation, r.state, sorted(m["client_id"] for m in r.members))
               for r in reb.itertuples()]
    assert history == [
        (0, "Empty", []),
        (1, "Stable", ["billing-a"]),
        (2, "Stable", ["billing-a", "billing-b"]),
        (3, "Stable", ["billing-b"]),
        (4, "Empty", []),
    ]
    stable = reb[reb.state == "Stable"]
    assert (stable.not_stable_ms >= 0).all() and (stable.not_stable_ms < 30_000).all()
    assert list(stable.not_stable_exact) == [True, False, False]
    assert [len(j) for j in stable.joined] == [1, 1, 0]
    assert [len(j) for j in stable.left] == [0, 0, 1]
    gen3 = stable.iloc[2]
    assert sorted((p["topic"], tuple(p["partitions"])) for m in gen3.members
                  for p in m["assigned_partitions"]) == [(TOPIC, (0, 1))]

    grid = _table(out, "lag_over_time").sort_values("time")
    assert (grid.lag >= 0).all() and grid.time.is_monotonic_increasing
    last = grid.groupby("partition").last()
    assert [(p, r.committed_offset, r.log_end_offset, r.lag) for p, r in last.iterrows()] == [
        (0, 60, 60, 0), (1, 52, 55, 3)]
    # Right before A's second commit p0 had 60 records and the commit of 30.
    before = grid[(grid.partition == 0) & (grid.committed_offset == 30)]
    assert not before.empty and before.lag.max() == 30

    rates = _table(out, "commit_rates")
    assert rates[rates.group == GROUP].offset_commits.sum() == 6
    assert os.path.getsize(os.path.join(out, "lag.png")) > 10_000
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| billing | 2 | 6 |" in summary
    assert "| billing | orders | 1 | 52 | 55 | 3 |" in summary
    share_lag.check_share_lag(out)
