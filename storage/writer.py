"""The log I/O thread: every write, fsync, truncate and unlink runs here, in submission order.

Jobs queued while the thread is busy are drained together, so one wake-up of the loop completes
many appends; the fsyncs of one file in a drain collapse into one, and the files of a drain are
synced concurrently (group commit: one fsync's time covers every append queued while the previous
drain ran, across partitions). The loop itself only writes small appends into the page cache
(storage/log.py), never syncs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .errors import describe_os_error
from .rate_limited_log import RateLimitedLog

log = logging.getLogger("kafkette.storage")
background_failures = RateLimitedLog(log)

_IOV_MAX = 1024


class _Job:
    __slots__ = ("kind", "fd", "arg", "then", "future")

    def __init__(self, kind: str, fd: Any, arg: Any, then: Callable[[Any], None] | None,
                 future: asyncio.Future | None) -> None:
        self.kind = kind
        self.fd = fd
        self.arg = arg
        self.then = then
        self.future = future


class DiskWriter:
    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name="kafkette-log-writer", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        if self._thread is None:
            return
        await self.call(lambda: None)  # drain everything queued before
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join)
        self._thread = None

    # Submission (event loop side) -----------------------------------------------------------
    def _submit(self, kind: str, fd: Any, arg: Any, then: Callable[[Any], None] | None,
                want_future: bool = True) -> asyncio.Future | None:
        assert self._loop is not None, "DiskWriter not started"
        fut = self._loop.create_future() if want_future else None
        self._queue.put(_Job(kind, fd, arg, then, fut))
        return fut

    def write(self, file: Any, position: int, buffers: Sequence[Any], *, fsync: bool = False,
              then: Callable[[Any], None] | None = None) -> asyncio.Future:
        """pwritev ``buffers`` at ``position`` of ``file`` (an object with ``.fd``, opened lazily
        by ``file.open_in_thread()``); ``then`` runs on the loop, in order, before the future."""
        fut = self._submit("write", file, (position, buffers, fsync), then)
        assert fut is not None
        return fut

    def fsync(self, file: Any, then: Callable[[Any], None] | None = None) -> asyncio.Future:
        fut = self._submit("fsync", file, None, then)
        assert fut is not None
        return fut

    def call(self, fn: Callable[[], Any], then: Callable[[Any], None] | None = None) -> asyncio.Future:
        """Run any blocking ``fn`` in order with the writes; resolves to its result."""
        fut = self._submit("call", None, fn, then)
        assert fut is not None
        return fut

    def call_nowait(self, fn: Callable[[], Any]) -> None:
        self._submit("call", None, fn, None, want_future=False)

    # Thread side --------------------------------------------------------------------------------
    def _run(self) -> None:
        q = self._queue
        while True:
            job = q.get()
            if job is None:
                return
            jobs = [job]
            stop = False
            while len(jobs) < 4096:
                try:
                    nxt = q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                jobs.append(nxt)
            results = self._execute(jobs)
            assert self._loop is not None
            try:
                self._loop.call_soon_threadsafe(_complete, results)
            except RuntimeError:  # loop closed during shutdown
                return
            if stop:
                return

    @staticmethod
    def _execute(jobs: list[_Job]) -> list[tuple[_Job, Any, BaseException | None]]:
        """Run ``jobs`` in order. Fsyncs are group commits: a file's fsync waits until the
        drain's writes are done (or a ``call`` job comes), so one fsync covers every write to
        it in the drain. Nothing is reported before the whole drain is done, so no job is
        answered before its data is synced; a failed fsync fails every job it covered."""
        results: list[tuple[_Job, Any, BaseException | None]] = []
        synced: set[int] = set()  # fds fsynced with no write since, within this drain
        pending: dict[int, list[int]] = {}  # fd -> indexes in results waiting for its fsync

        def sync_pending() -> None:
            for fd, exc in fsync_all(list(pending)).items():
                if exc is None:
                    synced.add(fd)
                    continue
                for i in pending[fd]:
                    results[i] = (results[i][0], None, exc)
            pending.clear()

        for job in jobs:
            try:
                if job.kind == "write":
                    position, buffers, fsync = job.arg
                    fd = job.fd.open_in_thread()
                    pwritev_all(fd, buffers, position)
                    synced.discard(fd)
                    if fsync:
                        pending.setdefault(fd, []).append(len(results))
                    results.append((job, None, None))
                elif job.kind == "fsync":
                    fd = job.fd.fd
                    if fd is not None and (fd in pending or fd not in synced):
                        pending.setdefault(fd, []).append(len(results))
                    results.append((job, None, None))
                else:
                    sync_pending()  # a call (truncate, close, unlink) comes after the syncs
                    synced.clear()
                    results.append((job, job.arg(), None))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
                results.append((job, None, exc))
        sync_pending()
        return results


def fsync_all(fds: list[int]) -> dict[int, BaseException | None]:
    """fsync every fd in ``fds``; each fd's exception (None when synced).

    Several files are synced concurrently, each on a thread of its own: the file system commits
    their metadata in one journal transaction and flushes the device cache once, so N files cost
    about one fsync instead of N in a row (the partitions of ``__consumer_offsets`` are N files)."""
    if not fds:
        return {}
    others = [_sync_pool().submit(_fsync_one, fd) for fd in fds[1:]]
    out = {fds[0]: _fsync_one(fds[0])}  # this thread syncs one file itself
    for fd, fut in zip(fds[1:], others, strict=True):
        out[fd] = fut.result()
    return out


def _fsync_one(fd: int) -> BaseException | None:
    try:
        os.fsync(fd)
    except BaseException as exc:  # noqa: BLE001 - handed to each job it covered
        return exc
    return None


_SYNC_THREADS = 16
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _sync_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(_SYNC_THREADS, thread_name_prefix="kafkette-fsync")
    return _pool


def pwritev_all(fd: int, buffers: Sequence[Any], position: int) -> None:
    bufs = [memoryview(b) for b in buffers if len(b)]
    while bufs:
        chunk = bufs[:_IOV_MAX]
        written = os.pwritev(fd, chunk, position)
        position += written
        # Drop what was written; short writes are rare (disk full raises instead).
        while bufs and written >= len(bufs[0]):
            written -= len(bufs[0])
            bufs.pop(0)
        if written and bufs:
            bufs[0] = bufs[0][written:]


def _complete(results: list[tuple[_Job, Any, BaseException | None]]) -> None:
    for job, value, exc in results:
        if job.then is not None:
            try:
                job.then(exc if exc is not None else value)
            except Exception:
                log.exception("log write completion failed")
        fut = job.future
        if fut is None or fut.done():
            if exc is not None and fut is None:
                background_failures.error(
                    getattr(exc, "errno", None), "background log operation failed: %s",
                    describe_os_error(exc) if isinstance(exc, OSError) else exc)
            continue
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(value)
