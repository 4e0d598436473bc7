"""The transaction state machine of one ``__transaction_state`` partition (Kafka's
TransactionCoordinator + TransactionStateManager). Transaction version 1: client-driven
AddPartitionsToTxn, the epoch kept across transactions. Transaction version 2 (KIP-890, chosen
per transaction by the version of the client's request: EndTxn v5+, Produce v12+, TxnOffsetCommit
v5+): every EndTxn bumps the epoch (the markers carry the bumped one, the response returns it;
an exhausted epoch moves to a new producer id once the markers are written), and the broker adds
partitions implicitly.

Every transition is one TransactionLog record; the runtime replays it into ``transactions``
before appending, and answers once it is durable. After a PrepareCommit/PrepareAbort is durable
the markers are written (``MarkerWriter``) and a Complete* record follows. Open transactions
are aborted when they outlive their timeout (a timer per transaction).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kafkette.protocol.transaction_records import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    DEAD,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    STATE_NAMES,
    TransactionLogValue,
    TransactionRecordDecodeError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

from ..runtime.coordinator_runtime import ShardContext
from ..runtime.error_codes import (
    CONCURRENT_TRANSACTIONS,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE,
    NONE,
    PRODUCER_FENCED,
    TRANSACTION_ABORTABLE,
)
from ..runtime.result import Result

log = logging.getLogger("kafkette.transactions")
MAX_EPOCH = 32767 - 1  # Short.MaxValue - 1: an epoch at it is exhausted
MARKER_RETRY_MS = 200

# write the COMMIT (True) / ABORT markers of (producer id, epoch) into these partitions
MarkerWriter = Callable[[int, int, bool, dict[str, set[int]]], Awaitable[None]]


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int
    partitions: dict[str, set[int]] = field(default_factory=dict)
    start_ms: int = -1
    last_update_ms: int = -1
    previous_producer_id: int = -1
    last_producer_epoch: int = -1  # memory only, as in Kafka: lets a retried init through
    next_producer_id: int = -1  # TV2: the producer id after an exhausted epoch
    tv: int = 0  # the client's transaction version (2: epoch bump per transaction)

    def value(self) -> TransactionLogValue:
        return TransactionLogValue(self.producer_id, self.producer_epoch, self.timeout_ms,
                                   self.state, self.partitions, self.last_update_ms,
                                   self.start_ms, self.previous_producer_id,
                                   self.next_producer_id, self.tv)


@dataclass(frozen=True, slots=True)
class TxnConfig:
    max_timeout_ms: int = 900_000
    markers: MarkerWriter | None = None
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    expiration_check_ms: int = 3_600_000  # transaction.remove.expired.transaction.cleanup...
    # How long a request that would answer CONCURRENT_TRANSACTIONS because the previous
    # transaction's markers are being written waits for them first (Kafka 4.x's server-side
    # retry, add.partitions.to.txn.retry.backoff.max.ms)
    settle_wait_ms: int = 100


class TransactionShard:
    def __init__(self, partition: int, context: ShardContext, config: TxnConfig) -> None:
        self.partition = partition
        self.context = context
        self.config = config
        self.transactions: dict[str, TxnMetadata] = {}
        self._marker_tasks: set[asyncio.Task] = set()
        # transactional id -> resolved when its PrepareCommit/PrepareAbort is completed
        self._completions: dict[str, asyncio.Future] = {}
        self._alive = True

    # Lifecycle / replay ----------------------------------------------------------------------
    def on_loaded(self) -> None:
        self._schedule_expiration()
        for md in list(self.transactions.values()):
            if md.state == ONGOING:
                self._schedule_timeout(md)
            elif md.state in (PREPARE_COMMIT, PREPARE_ABORT):
                self._send_markers(md.transactional_id)

    def on_unloaded(self, error: int) -> None:
        self._alive = False
        self.context.cancel(("txn-expiration", self.partition))
        for md in self.transactions.values():
            self.context.cancel(("txn-timeout", md.transactional_id))
        for task in self._marker_tasks:
            task.cancel()
        self._settle_all()

    def _settle_all(self) -> None:
        completions, self._completions = self._completions, {}
        for fut in completions.values():
            if not fut.done():
                fut.set_result(None)

    def completion(self, tid: str) -> asyncio.Future | None:
        """A future resolved once the PrepareCommit/PrepareAbort of ``tid`` is completed (its
        Complete* record applied), or None when ``tid`` is not between the two."""
        md = self.transactions.get(tid)
        if md is None or md.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            return None
        fut = self._completions.get(tid)
        if fut is None or fut.done():
            fut = self._completions[tid] = self.context.new_future()
        return fut

    def replay_all(self, records: Iterable[Any]) -> int:
        count = 0
        for key, value in records:
            count += 1
            try:
                tid = decode_key(key)
                if value is None:
                    self.transactions.pop(tid, None)
                    if self._completions:
                        self._settle(tid)
                    continue
                v = decode_value(value)
                if not 0 <= v.state < len(STATE_NAMES):
                    raise TransactionRecordDecodeError(f"unknown transaction state {v.state}")
            except TransactionRecordDecodeError as exc:
                log.warning("skipping undecodable __transaction_state-%d record: %s",
                            self.partition, exc)
                continue
            old = self.transactions.get(tid)
            md = TxnMetadata(tid, v.producer_id, v.producer_epoch, v.timeout_ms, v.state,
                             {t: set(p) for t, p in v.partitions.items()}, v.start_ms,
                             v.last_update_ms, v.previous_producer_id,
                             next_producer_id=v.next_producer_id,
                             tv=v.client_transaction_version)
            if old is not None and old.producer_id == md.producer_id:
                md.last_producer_epoch = (old.producer_epoch if old.producer_epoch != md.producer_epoch
                                          else old.last_producer_epoch)
            self.transactions[tid] = md
            if self._completions and md.state not in (PREPARE_COMMIT, PREPARE_ABORT):
                self._settle(tid)
        return count

    def _settle(self, tid: str) -> None:
        fut = self._completions.pop(tid, None)
        if fut is not None and not fut.done():
            fut.set_result(None)

    def _write(self, md: TxnMetadata, response: Any,
               on_durable: Callable[[], None] | None = None) -> Result:
        md.last_update_ms = self.context.now_ms()
        return Result([(encode_key(md.transactional_id), encode_value(md.value()))], response,
                      on_durable=on_durable)

    # InitProducerId --------------------------------------------------------------------------
    def init_producer_id(self, tid: str, timeout_ms: int, new_pid: int, expected_pid: int,
                         expected_epoch: int) -> Result:
        """Response: (error, producer id, epoch). ``new_pid``: allocated beforehand, used when
        the id is new or its epoch is exhausted."""
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return Result((), (INVALID_TRANSACTION_TIMEOUT, -1, -1))
        md = self.transactions.get(tid)
        if new_pid < 0 and (md is None or md.producer_epoch >= MAX_EPOCH - 1):
            # changed since the service looked (expired, or bumped meanwhile): the client retries
            return Result((), (CONCURRENT_TRANSACTIONS, -1, -1))
        if md is None:
            md = TxnMetadata(tid, new_pid, -1, timeout_ms, EMPTY)
            return self._bump_to_empty(md, timeout_ms, new_pid)
        if expected_pid != -1 and not (
                (expected_pid == md.producer_id
                 and expected_epoch in (md.producer_epoch, md.last_producer_epoch))
                or (expected_pid == md.previous_producer_id
                    and expected_epoch == md.last_producer_epoch)):
            return Result((), (PRODUCER_FENCED, -1, -1))
        state = md.state
        if state in (PREPARE_COMMIT, PREPARE_ABORT):
            return Result((), (CONCURRENT_TRANSACTIONS, -1, -1))
        if state == ONGOING:
            # A previous instance left a transaction open: fence its epoch and abort it; the
            # client retries once the abort is complete (Kafka's prepareFenceProducerEpoch).
            return self._prepare_end(md, commit=False, bump=True,
                                     response=(CONCURRENT_TRANSACTIONS, -1, -1))
        if state == DEAD:
            return Result((), (CONCURRENT_TRANSACTIONS, -1, -1))
        if (expected_pid == md.producer_id and expected_epoch == md.last_producer_epoch
                and md.last_producer_epoch >= 0):
            # A retry of an init that already bumped: answer the current epoch again.
            return Result((), (NONE, md.producer_id, md.producer_epoch))
        return self._bump_to_empty(md, timeout_ms, new_pid)

    def _bump_to_empty(self, md: TxnMetadata, timeout_ms: int, new_pid: int) -> Result:
        nxt = TxnMetadata(md.transactional_id, md.producer_id, md.producer_epoch + 1,
                          timeout_ms, EMPTY, previous_producer_id=md.previous_producer_id,
                          tv=md.tv)
        if md.producer_epoch >= MAX_EPOCH or md.producer_epoch < -1:
            nxt.previous_producer_id, nxt.producer_id, nxt.producer_epoch = md.producer_id, new_pid, 0
        return self._write(nxt, (NONE, nxt.producer_id, nxt.producer_epoch))

    # AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------------
    def _check_producer(self, md: TxnMetadata | None, pid: int, epoch: int) -> int:
        if md is None or md.producer_id != pid:
            return INVALID_PRODUCER_ID_MAPPING
        if md.producer_epoch != epoch:
            return PRODUCER_FENCED
        if md.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return CONCURRENT_TRANSACTIONS
        if md.state == DEAD:
            return INVALID_PRODUCER_ID_MAPPING
        return NONE

    def add_partitions(self, tid: str, pid: int, epoch: int,
                       partitions: dict[str, set[int]], tv: int = 1) -> Result:
        """Response: one error for every partition. ``tv`` 2: an implicit add of the broker
        (Produce v12+, TxnOffsetCommit v5+) in a transaction of transaction version 2."""
        md = self.transactions.get(tid)
        error = self._check_producer(md, pid, epoch)
        if error != NONE:
            return Result((), error)
        assert md is not None
        if md.state == ONGOING and all(parts <= md.partitions.get(t, set())
                                       for t, parts in partitions.items()):
            return Result((), NONE)
        merged = {t: set(p) for t, p in md.partitions.items()} if md.state == ONGOING else {}
        for topic, parts in partitions.items():
            merged.setdefault(topic, set()).update(parts)
        nxt = TxnMetadata(tid, pid, epoch, md.timeout_ms, ONGOING, merged,
                          md.start_ms if md.state == ONGOING else self.context.now_ms(),
                          previous_producer_id=md.previous_producer_id, tv=tv)
        result = self._write(nxt, NONE)
        if md.state != ONGOING:
            self._schedule_timeout(nxt)
        return result

    # EndTxn ----------------------------------------------------------------------------------
    def end_txn(self, tid: str, pid: int, epoch: int, commit: bool, tv: int = 1,
                new_pid: int = -1) -> Result:
        """Response: (error, producer id, epoch); the id and epoch are the ones to use next
        (EndTxn v5+ returns them). ``tv`` 2: the epoch is bumped (KIP-890); ``new_pid``:
        allocated beforehand for an exhausted epoch."""
        md = self.transactions.get(tid)
        if md is None:
            return Result((), (INVALID_PRODUCER_ID_MAPPING, -1, -1))
        state = md.state
        if md.tv >= 2:
            # Kafka's endTransaction for transaction version 2: the same epoch is the next
            # transaction's; a retry carries the epoch before the bump.
            bumped = md.producer_epoch == epoch + 1
            overflowed = (md.previous_producer_id == pid and epoch == MAX_EPOCH
                          and md.producer_epoch == 0)
            if state in (PREPARE_COMMIT, PREPARE_ABORT):
                valid = bumped
            elif state in (COMPLETE_COMMIT, COMPLETE_ABORT):
                valid = bumped or overflowed
            else:
                valid = epoch == md.producer_epoch
            if md.producer_id != pid and not overflowed:
                return Result((), (INVALID_PRODUCER_ID_MAPPING, -1, -1))
        else:
            if md.producer_id != pid:
                return Result((), (INVALID_PRODUCER_ID_MAPPING, -1, -1))
            valid = md.producer_epoch == epoch
        if not valid:
            return Result((), (PRODUCER_FENCED, -1, -1))
        if state == ONGOING:
            if tv >= 2 and md.producer_epoch >= MAX_EPOCH and new_pid < 0:
                return Result((), (CONCURRENT_TRANSACTIONS, -1, -1))  # allocate first
            return self._prepare_end(md, commit, bump=False, response=None, tv=tv,
                                     new_pid=new_pid)
        error = INVALID_TXN_STATE
        if state == COMPLETE_COMMIT:
            error = NONE if commit else INVALID_TXN_STATE
        elif state == COMPLETE_ABORT:
            error = NONE if not commit else INVALID_TXN_STATE
        elif state == PREPARE_COMMIT:
            error = CONCURRENT_TRANSACTIONS if commit else INVALID_TXN_STATE
        elif state == PREPARE_ABORT:
            error = CONCURRENT_TRANSACTIONS if not commit else INVALID_TXN_STATE
        if error == NONE:
            return Result((), (NONE, md.producer_id, md.producer_epoch))
        return Result((), (error, -1, -1))

    def _prepare_end(self, md: TxnMetadata, commit: bool, bump: bool, response: Any,
                     tv: int | None = None, new_pid: int = -1) -> Result:
        """PrepareCommit/PrepareAbort. ``bump``: fence the producer (a new instance's init, a
        timeout). ``response`` None: the EndTxn answer, (NONE, producer id, epoch to use)."""
        tv = md.tv if tv is None else tv
        if bump:
            epoch = md.producer_epoch + 1 if md.producer_epoch < MAX_EPOCH else md.producer_epoch
            if tv >= 2:  # Kafka: the fence bumps, then the abort of version 2 bumps again
                epoch = min(epoch + 1, MAX_EPOCH + 1)
        else:  # transaction version 2 bumps on every EndTxn (at most to Short.MaxValue)
            epoch = md.producer_epoch + 1 if tv >= 2 else md.producer_epoch
        nxt = TxnMetadata(md.transactional_id, md.producer_id, epoch, md.timeout_ms,
                          PREPARE_COMMIT if commit else PREPARE_ABORT,
                          {t: set(p) for t, p in md.partitions.items()}, md.start_ms,
                          previous_producer_id=md.previous_producer_id,
                          next_producer_id=new_pid if tv >= 2 else -1, tv=tv)
        if response is None:
            response = (NONE, md.producer_id, epoch) if new_pid < 0 or tv < 2 else \
                (NONE, new_pid, 0)
        self.context.cancel(("txn-timeout", md.transactional_id))
        tid = md.transactional_id
        return self._write(nxt, response, on_durable=lambda: self._send_markers(tid))

    # Markers and completion ------------------------------------------------------------------
    def _send_markers(self, tid: str) -> None:
        md = self.transactions.get(tid)
        if md is None or md.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            return
        commit = md.state == PREPARE_COMMIT
        task = asyncio.ensure_future(self._markers(md.producer_id, md.producer_epoch, commit,
                                                   {t: set(p) for t, p in md.partitions.items()}))
        self._marker_tasks.add(task)

        def done(t: asyncio.Task) -> None:
            self._marker_tasks.discard(t)
            if t.cancelled():
                return
            if t.exception() is not None:
                log.warning("writing %s markers of transactional id %r failed: %r; retrying",
                            "COMMIT" if commit else "ABORT", tid, t.exception())
                self.context.schedule(("txn-markers", tid), MARKER_RETRY_MS,
                                      lambda s: s._retry_markers(tid))
                return
            self._write_now(lambda s: s._complete(tid, md.producer_id, md.producer_epoch))
        task.add_done_callback(done)

    def _write_now(self, op: Callable[[TransactionShard], Result]) -> None:
        """Run a write op of this shard's own (not on a timer: a test's manual clock must not
        hold a completion back); dropped once the shard is unloaded."""
        if not self._alive:
            return
        try:
            _response, waiter = self.context.write(op)  # type: ignore[attr-defined]  # the context is the runtime's PartitionContext, whose write ShardContext does not name
        except Exception as exc:  # noqa: BLE001 - the shard is reloading: it resumes on load
            log.debug("__transaction_state-%d: completing a transaction failed: %r",
                      self.partition, exc)
            return
        if waiter is not None:
            waiter.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def _markers(self, pid: int, epoch: int, commit: bool,
                       partitions: dict[str, set[int]]) -> None:
        if self.config.markers is not None and partitions:
            await self.config.markers(pid, epoch, commit, partitions)

    def _retry_markers(self, tid: str) -> Result:
        self._send_markers(tid)
        return Result((), None)

    def _complete(self, tid: str, pid: int, epoch: int) -> Result:
        md = self.transactions.get(tid)
        if md is None or md.producer_id != pid or md.producer_epoch != epoch or \
                md.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            return Result((), None)
        nxt = TxnMetadata(tid, pid, epoch, md.timeout_ms,
                          COMPLETE_COMMIT if md.state == PREPARE_COMMIT else COMPLETE_ABORT,
                          {}, md.start_ms, previous_producer_id=md.previous_producer_id, tv=md.tv)
        if md.tv >= 2 and md.next_producer_id >= 0:
            # the epoch ran out: the next transaction uses the new producer id (Kafka's
            # prepareComplete)
            nxt.previous_producer_id, nxt.producer_id, nxt.producer_epoch = \
                pid, md.next_producer_id, 0
        return self._write(nxt, None)

    # Timeouts --------------------------------------------------------------------------------
    def _schedule_timeout(self, md: TxnMetadata) -> None:
        tid, pid, epoch, start = md.transactional_id, md.producer_id, md.producer_epoch, md.start_ms
        delay = max(start + md.timeout_ms - self.context.now_ms(), 0)
        self.context.schedule(("txn-timeout", tid), delay,
                              lambda s: s._abort_timed_out(tid, pid, epoch, start))

    def _abort_timed_out(self, tid: str, pid: int, epoch: int, start: int) -> Result:
        md = self.transactions.get(tid)
        if md is None or md.state != ONGOING or md.producer_id != pid or \
                md.producer_epoch != epoch or md.start_ms != start:
            return Result((), None)
        log.info("aborting transaction of transactional id %r (producer %d epoch %d): open for "
                 "more than %d ms", tid, pid, epoch, md.timeout_ms)
        return self._prepare_end(md, commit=False, bump=True, response=(NONE, -1, -1))

    # transactional.id.expiration.ms --------------------------------------------------------
    def _schedule_expiration(self) -> None:
        self.context.schedule(("txn-expiration", self.partition),
                              self.config.expiration_check_ms, lambda s: s.expire_ids())

    def expire_ids(self) -> Result:
        """Tombstones for ids without a transaction that were not used for the expiration
        time (Kafka's removeExpiredTransactionalIds)."""
        now = self.context.now_ms()
        limit = self.config.id_expiration_ms
        expired = [tid for tid, md in self.transactions.items()
                   if md.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
                   and now - md.last_update_ms >= limit]
        if expired:
            log.info("__transaction_state-%d: expiring %d transactional id(s)", self.partition,
                     len(expired))
        self._schedule_expiration()
        return Result([(encode_key(tid), None) for tid in expired], None)

    # Reads -----------------------------------------------------------------------------------
    def verify_partition(self, tid: str, pid: int, epoch: int, topic: str, partition: int) -> int:
        """Produce verification (KIP-890 part 1): the partition must be in the ongoing
        transaction of this producer id and epoch."""
        md = self.transactions.get(tid)
        if md is None or md.producer_id != pid:
            return INVALID_PRODUCER_ID_MAPPING
        if md.producer_epoch != epoch:
            return INVALID_PRODUCER_EPOCH
        if md.state != ONGOING or partition not in md.partitions.get(topic, ()):
            return INVALID_TXN_STATE
        return NONE

    def verify_partitions(self, tid: str, pid: int, epoch: int,
                          partitions: dict[str, set[int]]) -> dict[tuple[str, int], int]:
        md = self.transactions.get(tid)
        code = NONE
        if md is None or md.producer_id != pid:
            code = INVALID_PRODUCER_ID_MAPPING
        elif md.producer_epoch != epoch:
            code = PRODUCER_FENCED
        elif md.state in (PREPARE_COMMIT, PREPARE_ABORT):
            code = CONCURRENT_TRANSACTIONS
        return {(t, p): code if code != NONE else
                NONE if p in md.partitions.get(t, ()) else TRANSACTION_ABORTABLE  # type: ignore[union-attr]  # md was checked for None above (a missing transaction answers earlier)
                for t, ps in partitions.items() for p in ps}

    def describe(self, tid: str) -> TxnMetadata | None:
        return self.transactions.get(tid)

    def list(self) -> list[TxnMetadata]:
        return list(self.transactions.values())
