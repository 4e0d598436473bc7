"""The errors a partition log raises, each with the Kafka error code the broker answers."""

from __future__ import annotations

import errno
import resource


class OffsetOutOfRangeError(Exception):
    code = 1  # OFFSET_OUT_OF_RANGE


class RecordTooLargeError(Exception):
    code = 10  # MESSAGE_TOO_LARGE


class InvalidTimestampError(Exception):
    code = 32  # INVALID_TIMESTAMP


class KafkaStorageError(Exception):
    code = 56  # KAFKA_STORAGE_ERROR


def describe_os_error(exc: OSError) -> str:
    """``exc`` as one line a person can act on: out of file descriptors names the limit and
    how to raise it (every segment a partition wrote or read holds one)."""
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        which = "the system's" if exc.errno == errno.ENFILE else f"the process's ({soft})"
        return (f"too many open files: {which} open-file limit is reached; raise it "
                f"(ulimit -n, systemd LimitNOFILE, docker --ulimit nofile; ulimit -n is {soft} "
                "now) or use fewer, larger segments (segment.bytes)")
    if exc.errno == errno.ENOSPC:
        return f"no space left on device{f' ({exc.filename})' if exc.filename else ''}"
    return str(exc)


__all__ = ["InvalidTimestampError", "KafkaStorageError", "OffsetOutOfRangeError",
           "RecordTooLargeError", "describe_os_error"]
