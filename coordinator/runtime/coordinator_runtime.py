"""The coordinator runtime's partition context: one per partition of a coordinator's internal
topic (Kafka's CoordinatorContext; the partitions a node leads are in leadership.py, Kafka's
CoordinatorRuntime). Knows nothing about groups.

A context runs write ops against its shard, replays their records, batches them into log appends
and completes each op once its batch is durable, in log order. Reads wait behind pending writes.
A failed append fails every op waiting on that batch or a later one and reloads the shard from
the log with the same replay code that loads it at start. Timers belong to the context: their ops
go through the same write path and are dropped once the shard they were set for is gone.

Every op runs to completion on the event loop without awaiting, so a shard applies one op at a
time; an op's order is its call order.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

from .clock import Clock
from .coordinator_log import CoordinatorLog, RawRecord
from .error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    NOT_COORDINATOR,
    UNKNOWN_SERVER_ERROR,
    CoordinatorError,
    append_error,
)
from .failure_log import FailureLog, retry_delay_ms
from .futures import DurableFuture, ParkedFuture
from .result import Result

log = logging.getLogger("kafkette.coordinator")

MAX_BATCH_RECORDS = 5000
T = TypeVar("T")


WriteOp = Callable[[Any], Result]


class Shard(Protocol):
    """What the runtime needs from a state machine (Kafka's CoordinatorShard)."""

    def replay_all(self, records: Any) -> int:
        """Apply records in log order; returns how many."""

    def on_loaded(self) -> None: ...

    def on_unloaded(self, error: int) -> None:
        """The shard is dropped: complete parked requests with ``error``."""


class ShardContext(Protocol):
    """What a shard may use of its context: time, timers whose ops go through the write path,
    and futures for parked requests (soft state)."""

    def schedule(self, key: Hashable, delay_ms: int, op: WriteOp) -> None: ...

    def touch(self, key: Hashable, delay_ms: int) -> bool:
        """Move the pending timer ``key`` to ``delay_ms`` from now, keeping its op; False if
        there is none (then ``schedule`` it). A session-timeout re-arm on every heartbeat."""

    def cancel(self, key: Hashable) -> None: ...

    def now_ms(self) -> int: ...

    def new_future(self) -> ParkedFuture: ...

    writes_failing: bool  # from a failed append until one succeeds: Results carry an undo


ShardFactory = Callable[["PartitionContext"], Shard]


class State(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"
    CLOSED = "closed"


# For hot paths (write, the heartbeat): a module global is read in ~10 ns, State.ACTIVE in ~70.
STATE_ACTIVE = State.ACTIVE


# (future answered with the response, response, on_durable hook, on_error: maps a failure to
# the future's result; without it the future gets the exception)
_Waiter = tuple[asyncio.Future, Any, "Callable[[], None] | None", "Callable[[BaseException], Any] | None"]


def _fail_waiter(waiter: _Waiter, exc: BaseException) -> None:
    fut, _response, _hook, on_error = waiter
    if fut.done():
        return
    if on_error is None:
        fut.set_exception(exc)
    else:
        fut.set_result(on_error(exc))


class _Batch:
    __slots__ = ("records", "waiters", "durable", "failed", "timer", "undos")

    def __init__(self) -> None:
        self.records: list[RawRecord] = []
        self.waiters: list[_Waiter] = []
        self.durable = False
        self.failed = False
        self.timer: Hashable | None = None  # key of its write-timeout timer, once armed
        # its ops' undos in op order; None once one with records has none (a failure reloads)
        self.undos: list[Callable[[], None]] | None = []


class PartitionContext:
    """One ``__consumer_offsets`` partition: its shard, state, batching and timers.

    Batching (adaptive linger): with no append in flight a batch is flushed at the end of the
    current loop turn, so requests that arrived together share it (a connection pipelines its
    OffsetCommits, so all of them); while an append is in flight records accumulate, for at most
    ``linger_ms``, and go out as one batch as soon as it is done. An append the log reports
    durable at once (a page-cache write the flush policy allows) completes its waiters in the
    flush itself, in log order behind any append not answered yet. With a flush policy that
    fsyncs, each append is one fsync in the log's writer thread for the whole batch (group
    commit), never on the loop. A batch's write timeout runs from its first op when it lingers
    behind an append, else from its flush in the same loop turn; a batch durable at once never
    arms one.
    """

    def __init__(self, partition: int, log_: CoordinatorLog, clock: Clock,
                 shard_factory: ShardFactory, linger_ms: int, write_timeout_ms: int) -> None:
        self.partition = partition
        self.log = log_
        self.clock = clock
        self._factory = shard_factory
        self._linger = max(linger_ms, 0) / 1000
        self._write_timeout_ms = write_timeout_ms
        self.state = State.LOADING
        self.shard: Any = None
        self.epoch = 0  # bumped whenever the shard is dropped: older timers are void
        self._open: _Batch | None = None
        self._inflight: deque[_Batch] = deque()  # flushed batches, in log order
        self._appending = 0  # appends the log has not answered yet
        self._flush_handle: asyncio.Handle | None = None
        self._batch_seq = 0
        self._ready: asyncio.Future | None = None  # set while (re)loading
        self._reload_task: asyncio.Task | None = None
        self._reload_failures = 0  # reloads failed in a row (their retries back off)
        self._failures, self.writes_failing = FailureLog(log), False  # see ShardContext
        self._tag: tuple[PartitionContext, int] | None = None  # see _timer_tag
        # The loop of the first write (asyncio.get_running_loop costs a getpid syscall).
        self._loop: asyncio.AbstractEventLoop | None = None

    # Lifecycle -------------------------------------------------------------------------------
    async def load(self) -> int:
        """Replay the whole partition log into a new shard, then activate it."""
        self.state = State.LOADING
        t0 = time.perf_counter()
        shard = self._factory(self)
        count = 0
        async for chunk in self.log.read():
            count += shard.replay_all(chunk)
        self.shard = shard
        self.state = State.ACTIVE
        shard.on_loaded()
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)
        self._ready = None
        log.debug("__consumer_offsets-%d: loaded %d records in %.0f ms", self.partition, count,
                  (time.perf_counter() - t0) * 1000)
        return count

    def unload(self, error: int = NOT_COORDINATOR) -> None:
        """Leadership lost: parked requests get ``error``; timers die with the shard."""
        if self.shard is not None and self.state is State.ACTIVE:
            self.shard.on_unloaded(error)
        self.state = State.CLOSED
        self.epoch += 1
        self.shard = None

    async def close(self) -> None:
        """Flush and wait for every pending append."""
        if self._reload_task is not None:
            self._reload_task.cancel()
        await self.idle()

    async def idle(self) -> None:
        """Wait until everything appended so far is durable or failed."""
        self.flush()
        batch = self._last_batch()
        if batch is not None:
            fut = asyncio.get_running_loop().create_future()
            batch.waiters.append((fut, None, None, None))
            await asyncio.wait([fut])
            if not fut.cancelled():
                fut.exception()

    def check(self) -> None:
        """Raise the error Kafka's runtime gives an op on a context that is not active."""
        state = self.state
        if state is State.ACTIVE:
            return
        if state is State.CLOSED:
            raise CoordinatorError(NOT_COORDINATOR)
        raise CoordinatorError(COORDINATOR_LOAD_IN_PROGRESS)

    # Writes ----------------------------------------------------------------------------------
    def write(self, op: Callable[..., Result], *args: Any,
              on_error: Callable[[BaseException], Any] | None = None,
              map_response: Callable[[Any], Any] | None = None
              ) -> tuple[Any, asyncio.Future | None]:
        """Run ``op(shard, *args)`` and queue its records.

        Returns ``(response, None)`` when the op can be answered now (no records and nothing
        pending), else ``(response, future)``: the future gets the response once the records (or,
        for an op without records, every write before it) are durable, or the append's
        exception (TimeoutError after ``offsets.commit.timeout.ms``), or ``on_error(exception)``
        when given (Kafka's ``exceptionally``). ``map_response`` turns the op's response into
        what is returned and what the future gets (a request's answer: the state machine
        returns codes, the caller says what they become); it runs once, when the op runs, so
        the future completes with the mapped answer in the same step as durability.
        CoordinatorError raised by the op (or by an inactive context) propagates before
        anything is written."""
        if self.state is not STATE_ACTIVE:
            self.check()
        try:
            result = op(self.shard, *args)
        except CoordinatorError:
            raise
        except Exception as exc:
            raise self._op_failed(exc) from exc
        response = result.response if map_response is None else map_response(result.response)
        return response, self._enqueue(result, response, on_error)

    def answer(self, op: Callable[[Any, Any], Result], request: Any,
               on_error: Callable[[BaseException], Any] | None = None,
               map_response: Callable[[Any], Any] | None = None) -> Any:
        """``write(op, request)`` as one value: the (mapped) response when it can be given
        now, else the DurableFuture of it. The form the hot request paths call: one request
        value (a fixed-arity call; ``*args`` costs ~0.2 µs more), and a request that writes
        nothing while nothing is pending (a steady heartbeat) costs one op call, no future.

        Its first lines are ``write``'s, inline (see the hot-path plan in group/group_service.py)."""
        if self.state is not STATE_ACTIVE:
            self.check()
        try:
            result = op(self.shard, request)
        except CoordinatorError:
            raise
        except Exception as exc:
            raise self._op_failed(exc) from exc
        response = result.response if map_response is None else map_response(result.response)
        if not result.records and self._open is None and not self._inflight:  # not pending()
            if result.on_durable is not None:
                result.on_durable()
            return response
        fut = self._enqueue(result, response, on_error)
        return response if fut is None else fut

    def _op_failed(self, exc: BaseException) -> CoordinatorError:
        """An op raised a bug: it may have changed the shard half-way, so the shard is
        reloaded; the op answers the returned error."""
        log.error("__consumer_offsets-%d: a write op failed", self.partition, exc_info=exc)
        self._fail(None, exc)
        return CoordinatorError(UNKNOWN_SERVER_ERROR)

    def _enqueue(self, result: Result, response: Any,
                 on_error: Callable[[BaseException], Any] | None) -> DurableFuture | None:
        """Replay and batch the records of an op that ran; None if it is answered now (no
        records, nothing pending), else the future of ``response``."""
        records = result.records
        if not records:
            batch = self._open or (self._inflight[-1] if self._inflight else None)
            if batch is None:
                if result.on_durable is not None:
                    result.on_durable()
                return None
        else:
            if result.replay:
                try:
                    self.shard.replay_all(records)
                except Exception as exc:
                    log.exception("__consumer_offsets-%d: replaying a write failed",
                                  self.partition)
                    self._fail(None, exc)
                    raise CoordinatorError(UNKNOWN_SERVER_ERROR) from exc
            batch = self._open
            if batch is None:
                batch = self._open_batch()
            batch.records.extend(records)
            undos = batch.undos
            if undos is not None:
                undo = result.undo
                if undo is None:
                    batch.undos = None
                else:
                    undos.append(undo)
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        fut = DurableFuture(loop=loop)
        batch.waiters.append((fut, response, result.on_durable, on_error))
        if len(batch.records) >= MAX_BATCH_RECORDS and batch is self._open:
            self.flush()
        return fut

    async def read(self, op: Callable[[Any], T]) -> T:
        """Run ``op`` on the shard once every write issued before is durable (a barrier, brief
        §3.4 option A); if one of them fails, after the shard is reloaded from the log."""
        while True:
            self.check()
            batch = self._last_batch()
            if batch is None:
                return op(self.shard)
            fut = asyncio.get_running_loop().create_future()
            batch.waiters.append((fut, None, None, None))
            await asyncio.wait([fut])
            if fut.cancelled() or fut.exception() is not None:
                ready = self._ready
                if ready is not None:
                    await asyncio.wait([ready])

    def pending(self) -> bool:
        return self._open is not None or bool(self._inflight)  # _last_batch() is not None

    def _last_batch(self) -> _Batch | None:
        if self._open is not None:
            return self._open
        return self._inflight[-1] if self._inflight else None

    def _open_batch(self) -> _Batch:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        batch = _Batch()
        self._open = batch
        if self._appending:
            self._flush_handle = loop.call_later(self._linger, self.flush)
            self._arm_timeout(batch)  # it lingers: its timeout runs from now
        else:
            # Flushed later in this loop turn: its timeout is armed then, and only if the
            # append is not durable at once (no timer per batch of a page-cache write).
            self._flush_handle = loop.call_soon(self.flush)
        return batch

    def _arm_timeout(self, batch: _Batch) -> None:
        """Fail the batch's waiters with TimeoutError after ``offsets.commit.timeout.ms``."""
        if self._write_timeout_ms > 0:
            self._batch_seq += 1
            batch.timer = ("write-timeout", self, self._batch_seq)
            self.clock.schedule(batch.timer, self._write_timeout_ms,
                                lambda: self._timed_out(batch))

    def flush(self) -> None:
        """Append the open batch now (the log keeps appends in submission order)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        batch = self._open
        if batch is None:
            return
        self._open = None
        if not batch.records:  # only ops without records waited on it
            self._inflight.append(batch)
            batch.durable = True
            self._complete_durable()
            return
        try:
            append = self.log.append_inline(batch.records)
        except Exception as exc:  # noqa: BLE001 - handed to every waiter
            self._fail(batch, exc)
            return
        self._inflight.append(batch)
        if append is None:  # durable already (a page-cache write the flush policy allows)
            batch.durable = True
            self._complete_durable()
            return
        if batch.timer is None:
            self._arm_timeout(batch)
        self._appending += 1
        append.add_done_callback(lambda f: self._appended(f, batch))

    def _appended(self, append: asyncio.Future, batch: _Batch) -> None:
        self._appending -= 1
        exc = (CoordinatorError(NOT_COORDINATOR, "append cancelled") if append.cancelled()
               else append.exception())
        if batch.failed:  # this or an earlier batch failed: its waiters were failed then
            self._maybe_reload()
            return
        if exc is not None:
            self._fail(batch, exc)
            return
        batch.durable = True
        self._complete_durable()
        if self._open is not None and not self._appending:
            self.flush()  # records that lingered behind this append go out now

    def _complete_durable(self) -> None:
        inflight = self._inflight
        while inflight and inflight[0].durable:
            batch = inflight.popleft()
            self.writes_failing = self.writes_failing and not batch.records
            if batch.timer is not None:
                self.clock.cancel(batch.timer)
            for fut, response, on_durable, _on_error in batch.waiters:
                if on_durable is not None:
                    try:
                        on_durable()
                    except Exception:
                        log.exception("__consumer_offsets-%d: completing a write failed",
                                      self.partition)
                if not fut.done():
                    fut.set_result(response)

    def _timed_out(self, batch: _Batch) -> None:
        exc = TimeoutError(f"write to __consumer_offsets-{self.partition} timed out after "
                           f"{self._write_timeout_ms} ms")
        for waiter in batch.waiters:
            _fail_waiter(waiter, exc)

    def _fail(self, batch: _Batch | None, exc: BaseException) -> None:
        """Fail ``batch`` and every batch after it, then undo them or reload the shard."""
        failed = list(self._inflight)
        if batch is not None and batch not in failed:
            failed.append(batch)
        if self._open is not None:
            failed.append(self._open)
        self._open = None
        self._inflight.clear()
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        # All failed ops undoable, no other append outstanding: undone, the shard stays loaded.
        undo = (batch is not None and self.state is State.ACTIVE and not self._appending
                and all(b.undos is not None for b in failed))
        self.writes_failing = True
        self._failures.warning("__consumer_offsets-%d: write failed (%r); failing %d pending "
                               "writes and %s", self.partition, exc, sum(len(b.waiters) for b in failed),
                               "undoing them in memory" if undo else "reloading the partition")
        self._fail_batches(failed, exc)
        if undo:
            for undo_op in reversed([u for b in failed for u in b.undos or ()]):
                undo_op()
            return
        if self.state is State.CLOSED:  # resigned: nothing to reload
            return
        if self.state is State.ACTIVE:
            self.shard.on_unloaded(append_error(exc))
        self.shard = None
        self.state = State.FAILED
        self.epoch += 1
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
        self._maybe_reload()

    def _fail_batches(self, failed: list[_Batch], exc: BaseException) -> None:
        for b in failed:
            b.failed = True
            if b.timer is not None:
                self.clock.cancel(b.timer)
            for waiter in b.waiters:
                _fail_waiter(waiter, exc)

    def _maybe_reload(self) -> None:
        if self.state is State.FAILED and not self._appending and self._reload_task is None:
            self._reload_task = asyncio.ensure_future(self._reload())

    async def _reload(self) -> None:
        try:
            await self.load()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - logged; retried on a timer
            delay_ms = retry_delay_ms(self._reload_failures)
            self._reload_failures += 1
            log.error("__consumer_offsets-%d: reloading failed (attempt %d: %r); retrying in "
                      "%d ms", self.partition, self._reload_failures, exc, delay_ms)
            self.state = State.FAILED  # until then: ops get COORDINATOR_LOAD_IN_PROGRESS
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(None)  # waiting reads retry and get that error
            self.clock.schedule(("coordinator-reload", self.partition, self.epoch), delay_ms,
                                self._maybe_reload)
        else:
            if self._reload_failures:
                log.warning("__consumer_offsets-%d: reloaded after %d failed attempt(s)",
                            self.partition, self._reload_failures)
            self._reload_failures = 0
        finally:
            self._reload_task = None

    # Timers ----------------------------------------------------------------------------------
    def schedule(self, key: Hashable, delay_ms: int, op: WriteOp) -> None:
        """Run write op ``op`` after ``delay_ms`` (replacing the timer of the same key), unless
        the shard is dropped before."""
        epoch = self.epoch
        self.clock.schedule(key, delay_ms, lambda: self._fire(epoch, op), self._timer_tag())

    def touch(self, key: Hashable, delay_ms: int) -> bool:
        """Move the pending timer ``key`` that this context set in its current epoch to
        ``delay_ms`` from now, keeping its op (no new closure, no loop timer re-created);
        False if there is none, or the move needs an earlier wake-up: then ``schedule``."""
        tag = self._tag
        if tag is None or tag[1] != self.epoch:
            return False
        return self.clock.extend(key, delay_ms, tag)

    def _timer_tag(self) -> tuple[PartitionContext, int]:
        """Marks this context's timers of the current epoch (a timer of an older epoch or of
        another context under the same key is never extended: its op would not run)."""
        tag = self._tag
        if tag is None or tag[1] != self.epoch:
            tag = self._tag = (self, self.epoch)
        return tag

    def cancel(self, key: Hashable) -> None:
        self.clock.cancel(key)

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def new_future(self) -> ParkedFuture:
        """The future of a parked answer (see ParkedFuture)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return ParkedFuture(loop=loop)

    def _fire(self, epoch: int, op: WriteOp) -> None:
        if epoch != self.epoch or self.state is not State.ACTIVE:
            return
        try:
            _response, waiter = self.write(op)
        except CoordinatorError as exc:
            log.debug("__consumer_offsets-%d: timer op failed: %s", self.partition, exc)
            return
        except Exception:
            log.exception("__consumer_offsets-%d: timer op failed", self.partition)
            return
        if waiter is not None:
            waiter.add_done_callback(_consume_exception)


def _consume_exception(fut: asyncio.Future) -> None:
    if not fut.cancelled():
        fut.exception()

