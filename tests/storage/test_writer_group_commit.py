"""The log writer thread's group commit: the fsyncs of one file in a drain collapse into one,
issued after the drain's writes to it and before any later call job; a failed fsync fails every
job it covered; nothing is answered before its data is synced."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kafkette.storage import writer as writer_module
from kafkette.storage.writer import DiskWriter, _Job


class _File:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def open_in_thread(self) -> int:
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self.fd


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every fsync (its fd) and call job (its name), in the order the thread ran them."""
    seen: list[Any] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        seen.append(("fsync", fd))
        real(fd)
    monkeypatch.setattr(writer_module.os, "fsync", fsync)
    return seen


def _write(f: _File, pos: int, data: bytes, fsync: bool = True) -> _Job:
    return _Job("write", f, (pos, [data], fsync), None, None)


def test_fsyncs_of_one_file_in_a_drain_collapse_into_one(tmp_path: Path, calls: list[Any]):
    a, b = _File(tmp_path / "a"), _File(tmp_path / "b")
    jobs = [_write(a, 0, b"1"), _write(b, 0, b"x"), _write(a, 1, b"2"), _write(a, 2, b"3"),
            _Job("fsync", a, None, None, None)]
    results = DiskWriter._execute(jobs)
    assert [exc for _job, _value, exc in results] == [None] * 5
    assert sorted(fd for _kind, fd in calls) == sorted([a.fd, b.fd])  # one each
    assert (tmp_path / "a").read_bytes() == b"123"


def test_a_call_job_comes_after_the_syncs_before_it(tmp_path: Path, calls: list[Any]):
    a = _File(tmp_path / "a")
    jobs = [_write(a, 0, b"1"), _Job("call", None, lambda: calls.append(("call", None)), None,
                                     None),
            _write(a, 1, b"2")]
    DiskWriter._execute(jobs)
    assert calls == [("fsync", a.fd), ("call", None), ("fsync", a.fd)]


def test_a_failed_fsync_fails_every_write_it_covered(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch):
    a, b = _File(tmp_path / "a"), _File(tmp_path / "b")

    def failing(fd: int) -> None:
        if fd == a.fd:
            raise OSError(5, "EIO")
    monkeypatch.setattr(writer_module.os, "fsync", failing)
    jobs = [_write(a, 0, b"1"), _write(b, 0, b"x"), _write(a, 1, b"2", fsync=False),
            _write(a, 2, b"3")]
    results = DiskWriter._execute(jobs)
    failed = [exc is not None for _job, _value, exc in results]
    # The unsynced write to a is not failed (it never asked for an fsync); both synced ones are.
    assert failed == [True, False, False, True]


def test_the_files_of_a_drain_are_synced_concurrently(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch):
    """Three files written in one drain: their fsyncs run at the same time (each waits at a
    barrier the other two must reach), so a drain costs one fsync's time, not three."""
    import threading

    files = [_File(tmp_path / name) for name in "abc"]
    barrier = threading.Barrier(3, timeout=10)
    real = os.fsync

    def fsync(fd: int) -> None:
        barrier.wait()  # BrokenBarrierError (the job fails) if the fsyncs ran one by one
        real(fd)
    monkeypatch.setattr(writer_module.os, "fsync", fsync)
    results = DiskWriter._execute([_write(f, 0, b"x") for f in files])
    assert [exc for _job, _value, exc in results] == [None, None, None]
