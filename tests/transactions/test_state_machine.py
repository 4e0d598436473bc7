"""The transaction state machine on the coordinator runtime (MemoryLog, manual clock, no
sockets) and the __transaction_state / marker codecs, byte for byte."""

from __future__ import annotations

import asyncio
import struct

import pytest

from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.runtime.coordinator_log import MemoryLog
from kafkette.coordinator.runtime.error_codes import (
    CONCURRENT_TRANSACTIONS,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE,
    NONE,
    PRODUCER_FENCED,
    TRANSACTIONAL_ID_NOT_FOUND,
)
from kafkette.coordinator.transaction.service import TransactionCoordinator
from kafkette.coordinator.transaction.shard import TxnConfig
from kafkette.protocol.control_records import control_type, marker_batch
from kafkette.protocol.records import parse_batch_header, verify_crc
from kafkette.protocol.transaction_records import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    ONGOING,
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)


def test_transaction_log_record_bytes() -> None:
    assert encode_key("app") == b"\x00\x00\x00\x03app"
    assert decode_key(encode_key("app")) == "app"
    value = TransactionLogValue(7, 2, 60_000, ONGOING, {"t": {1, 0}}, 1000, 900)
    raw = encode_value(value)
    assert raw == (struct.pack(">hqhib", 0, 7, 2, 60_000, ONGOING) + struct.pack(">i", 1)
                   + b"\x00\x01t" + struct.pack(">iii", 2, 0, 1) + struct.pack(">qq", 1000, 900))
    assert decode_value(raw) == value
    empty = encode_value(TransactionLogValue(7, 3, 60_000, EMPTY))
    assert empty[2 + 15:2 + 19] == b"\xff\xff\xff\xff"  # null partitions, as Kafka writes Empty
    # version 1 (flexible, tagged previous producer id) as transaction version 2 writes it
    v1 = (struct.pack(">hqhib", 1, 7, 3, 60_000, ONGOING) + b"\x02" + b"\x02t" + b"\x02"
          + struct.pack(">i", 4) + b"\x00" + struct.pack(">qq", 5, 6)
          + b"\x01" + b"\x00\x08" + struct.pack(">q", 99))
    decoded = decode_value(v1)
    assert decoded.partitions == {"t": {4}} and decoded.previous_producer_id == 99


def test_marker_batch_is_what_write_txn_markers_appends() -> None:
    batch = marker_batch(42, 3, True, 0, 1_700_000_000_000)
    header = parse_batch_header(batch)
    assert header.is_control and header.is_transactional and header.base_sequence == -1
    assert (header.producer_id, header.producer_epoch, header.records_count) == (42, 3, 1)
    assert verify_crc(batch) and control_type(batch) == 1
    assert control_type(marker_batch(42, 3, False, 0, 0)) == 0
    # one record: key ControlRecordType v0 (type), value EndTransactionMarker v0 (epoch)
    assert batch[61:] == bytes([0x20, 0, 0, 0, 8]) + b"\x00\x00\x00\x01" + bytes([12]) + \
        b"\x00\x00\x00\x00\x00\x00" + b"\x00"


@pytest.fixture
def env():
    loop = asyncio.new_event_loop()
    clock = ManualClock()
    logs: dict[int, MemoryLog] = {}
    markers: list[tuple[int, int, bool, dict]] = []
    pids = iter(range(1000, 2000))

    async def write_markers(pid: int, epoch: int, commit: bool, parts: dict) -> None:
        markers.append((pid, epoch, commit, parts))

    async def allocate() -> int:
        return next(pids)

    def coordinator() -> TransactionCoordinator:
        return TransactionCoordinator(1, 2, clock, TxnConfig(60_000, write_markers),
                                      lambda p: logs.setdefault(p, MemoryLog()), allocate)

    yield loop, clock, coordinator, markers
    loop.close()


def _settle(loop: asyncio.AbstractEventLoop) -> None:
    loop.run_until_complete(asyncio.sleep(0.01))


def test_commit_abort_fence_and_reload(env) -> None:
    loop, clock, new_coordinator, markers = env
    run = loop.run_until_complete
    coord = new_coordinator()
    run(coord.start())
    assert run(coord.init_producer_id("app", 120_000))[0] == INVALID_TRANSACTION_TIMEOUT
    error, pid, epoch = run(coord.init_producer_id("app", 30_000))
    assert (error, epoch) == (NONE, 0)
    assert run(coord.add_partitions("app", pid, epoch, {"t": {0, 1}})) == NONE
    assert run(coord.add_partitions("app", pid + 1, epoch, {"t": {0}})) == \
        INVALID_PRODUCER_ID_MAPPING
    assert run(coord.end_txn("app", pid, epoch, True))[0] == NONE
    _settle(loop)
    assert markers == [(pid, 0, True, {"t": {0, 1}})]
    assert run(coord.describe("app"))[1].state == COMPLETE_COMMIT
    assert run(coord.end_txn("app", pid, epoch, True))[0] == NONE  # a retried commit
    assert run(coord.end_txn("app", pid, epoch, False))[0] == INVALID_TXN_STATE
    # an instance leaves a transaction open; the next one fences it
    assert run(coord.add_partitions("app", pid, epoch, {"t": {1}})) == NONE
    # the init aborts it with a bumped epoch, waits for the abort's completion (where a client
    # would get CONCURRENT_TRANSACTIONS and retry) and bumps again
    assert run(coord.init_producer_id("app", 30_000)) == (NONE, pid, 2)
    assert markers[-1] == (pid, 1, False, {"t": {1}})  # aborted with the bumped epoch
    assert run(coord.add_partitions("app", pid, 0, {"t": {0}})) == PRODUCER_FENCED
    assert run(coord.add_partitions("app", pid, 2, {"t": {0}})) == NONE
    run(coord.stop())
    # a restart replays __transaction_state: the open transaction is still there, and times out
    coord = new_coordinator()
    run(coord.start())
    md = run(coord.describe("app"))[1]
    assert (md.state, md.producer_epoch, md.partitions) == (ONGOING, 2, {"t": {0}})

    async def advance() -> None:
        clock.advance(30_001)  # timers run write ops: on the loop

    run(advance())
    _settle(loop)
    assert markers[-1] == (pid, 3, False, {"t": {0}})
    assert run(coord.describe("app"))[1].state == COMPLETE_ABORT
    assert run(coord.end_txn("app", pid, 2, True))[0] == PRODUCER_FENCED
    # transactional.id.expiration.ms: an id without a transaction is forgotten after a week
    # of disuse (checked hourly); a tombstone makes it so after a restart too

    async def week() -> None:
        for _ in range(24 * 7 + 1):
            clock.advance(3_600_000)

    run(week())
    _settle(loop)
    assert run(coord.describe("app"))[0] == TRANSACTIONAL_ID_NOT_FOUND
    run(coord.stop())
    coord = new_coordinator()
    run(coord.start())
    assert run(coord.describe("app"))[0] == TRANSACTIONAL_ID_NOT_FOUND
    run(coord.stop())


def test_requests_wait_for_the_previous_transactions_markers() -> None:
    """A request arriving while the previous transaction's markers are written waits for its
    completion, at most settle_wait_ms (Kafka 4.x retries such adds on the server), and
    answers CONCURRENT_TRANSACTIONS only when the markers take longer than that."""
    loop = asyncio.new_event_loop()
    release = asyncio.Event()

    async def slow_markers(pid: int, epoch: int, commit: bool, parts: dict) -> None:
        await release.wait()

    async def allocate() -> int:
        return 7

    coord = TransactionCoordinator(1, 1, ManualClock(),
                                   TxnConfig(60_000, slow_markers, settle_wait_ms=50),
                                   lambda p: MemoryLog(), allocate)

    async def scenario() -> None:
        await coord.start()
        _, pid, epoch = await coord.init_producer_id("app", 30_000)
        assert await coord.add_partitions("app", pid, epoch, {"t": {0}}) == NONE
        assert (await coord.end_txn("app", pid, epoch, True))[0] == NONE
        # markers still being written, longer than the wait: the client is told to retry
        t0 = loop.time()
        assert await coord.add_partitions("app", pid, epoch, {"t": {0}}) == \
            CONCURRENT_TRANSACTIONS
        assert loop.time() - t0 >= 0.045
        # the markers complete while a request waits: it is answered as a retry would be
        waiting = asyncio.ensure_future(coord.add_partitions("app", pid, epoch, {"t": {1}}))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        release.set()
        assert await asyncio.wait_for(waiting, 1) == NONE
        md = (await coord.describe("app"))[1]
        assert (md.state, md.partitions) == (ONGOING, {"t": {1}})
        await coord.stop()

    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()


def test_transaction_version_2_epoch_bump_overflow_and_reload(env) -> None:
    """EndTxn of transaction version 2 bumps the epoch (markers carry the bumped one); at an
    exhausted epoch the transaction ends on a new producer id at epoch 0 (Kafka's
    prepareComplete); __transaction_state keeps the version across a restart."""
    from kafkette.coordinator.transaction.shard import MAX_EPOCH

    loop, _clock, new_coordinator, markers = env
    run = loop.run_until_complete
    coord = new_coordinator()
    run(coord.start())
    _, pid, epoch = run(coord.init_producer_id("v2", 30_000))
    assert run(coord.add_partitions("v2", pid, epoch, {"t": {0}}, tv=2)) == NONE
    assert run(coord.end_txn("v2", pid, epoch, True, tv=2)) == (NONE, pid, epoch + 1)
    _settle(loop)
    assert markers[-1] == (pid, epoch + 1, True, {"t": {0}})
    assert run(coord.end_txn("v2", pid, epoch, True, tv=2)) == (NONE, pid, epoch + 1)  # retry
    assert run(coord.end_txn("v2", pid, epoch, False, tv=2))[0] == INVALID_TXN_STATE
    assert run(coord.end_txn("v2", pid, epoch - 1, True, tv=2))[0] == PRODUCER_FENCED
    run(coord.stop())
    coord = new_coordinator()  # the version survives a restart (TransactionLogValue v1)
    run(coord.start())
    md = run(coord.describe("v2"))[1]
    assert (md.state, md.producer_epoch, md.tv) == (COMPLETE_COMMIT, epoch + 1, 2)
    assert run(coord.end_txn("v2", pid, epoch, True, tv=2)) == (NONE, pid, epoch + 1)
    # a new instance fences an open transaction of version 2: the fence and the abort each
    # bump (Kafka's prepareFenceProducerEpoch + prepareAbortOrCommit), the init once more
    assert run(coord.add_partitions("v2", pid, epoch + 1, {"t": {2}}, tv=2)) == NONE
    assert run(coord.init_producer_id("v2", 30_000)) == (NONE, pid, epoch + 4)
    assert markers[-1] == (pid, epoch + 3, False, {"t": {2}})
    assert run(coord.end_txn("v2", pid, epoch + 1, False, tv=2))[0] == PRODUCER_FENCED
    md = run(coord.describe("v2"))[1]
    # the epoch runs out: the next producer id, epoch 0, once the markers are written
    md.producer_epoch = MAX_EPOCH
    assert run(coord.add_partitions("v2", pid, MAX_EPOCH, {"t": {1}}, tv=2)) == NONE
    error, new_pid, new_epoch = run(coord.end_txn("v2", pid, MAX_EPOCH, False, tv=2))
    assert (error, new_epoch) == (NONE, 0) and new_pid != pid
    _settle(loop)
    assert markers[-1] == (pid, MAX_EPOCH + 1, False, {"t": {1}})
    md = run(coord.describe("v2"))[1]
    assert (md.state, md.producer_id, md.producer_epoch, md.previous_producer_id) == \
        (COMPLETE_ABORT, new_pid, 0, pid)
    assert run(coord.end_txn("v2", pid, MAX_EPOCH, False, tv=2)) == (NONE, new_pid, 0)
    assert run(coord.add_partitions("v2", new_pid, 0, {"t": {0}}, tv=2)) == NONE
    run(coord.stop())
