"""Wire fuzzer: random valid requests for every advertised API version, then mutated.

    python -m tests.hostile.fuzz [--cases 100000] [--seed 1] [--workers 8]

The broker runs in a child process under an address-space limit (``RLIMIT_AS``, 4 GiB), so an
allocation bomb shows as a dead broker on any host (kio's native reader aborts the process when
an allocation fails). Requests are built from kio's schemas with random values, encoded with
kio's writers, then mutated where counts, lengths and varints live: int32/int16 overwritten with
-1, 0x7fffffff, 0x40000000..., 5-byte varints inserted, bytes flipped, frames truncated or
extended. A healthy member heartbeats and commits alongside; it must see no error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import resource
import socket
import struct
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from kio.schema.errors import ErrorCode

from kafkette.broker.testing import BrokerProcess, test_config
from kafkette.protocol.codec import codec, encode_request
from tests.hostile.healthy import HealthyClient
from tests.wire import WireClient

ADDRESS_SPACE_LIMIT = 4 << 30
CASE_TIMEOUT = 0.5  # a parked request (long-poll Fetch, JoinGroup) is abandoned after this
# Fields whose full int range would ask the broker for real work (a topic of 2^31 partitions):
# kept small, as this fuzzer looks for malformed input, not for admin limits.
_SMALL_INTS = {"num_partitions", "count", "replication_factor"}
_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint16": 16}
_COUNT_PATTERNS = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x40\x00\x00\x00",
                   b"\x80\x00\x00\x00", b"\x00\x0f\xff\xff", b"\xff\xff\xff\xfe"]
_SHORT_PATTERNS = [b"\xff\xff", b"\x7f\xff", b"\x80\x00", b"\xff\xfe"]
_VARINT_PATTERNS = [b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x07", b"\xff\xff\xff\xff\x7f",
                    b"\x80\x80\x80\x80\x80\x01", b"\xff\xff\x03", b"\x00"]


# Random valid values -------------------------------------------------------------------------

def _unwrap(tp: Any) -> tuple[Any, bool, bool]:
    nullable = False
    if get_origin(tp) in (UnionType, Union):
        args = [a for a in get_args(tp) if a is not NoneType]
        nullable, tp = True, args[0]
    if get_origin(tp) is tuple:
        return get_args(tp)[0], True, nullable
    return tp, False, nullable


def _int(rng: random.Random, bits: int, small: bool) -> int:
    if small or rng.random() < 0.7:
        return rng.choice([-1, 0, 0, 1, 1, 2, 3, rng.randint(0, 100)])
    return rng.randint(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def _primitive(rng: random.Random, kafka_type: str, name: str) -> Any:
    if kafka_type in _INT_RANGES:
        bits = _INT_RANGES[kafka_type]
        value = _int(rng, bits, name in _SMALL_INTS)
        return value % (1 << 16) if kafka_type == "uint16" else value
    if kafka_type == "bool":
        return rng.random() < 0.5
    if kafka_type == "string":
        return rng.choice(["", "g", "t", "consumer", "range", f"fz-{rng.randint(0, 20)}",
                           "".join(rng.choices("abcxyz-._", k=rng.randint(1, 30)))])
    if kafka_type in ("bytes", "records"):
        return rng.randbytes(rng.choice([0, 1, 8, 61, 200]))
    if kafka_type == "uuid":
        return rng.choice([uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))])
    if kafka_type == "error_code":
        return ErrorCode.none
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return dt.timedelta(milliseconds=rng.choice([-1, 0, 10, 100, 30000]))
    if kafka_type == "datetime_i64":
        return dt.datetime.fromtimestamp(rng.randint(0, 2_000_000_000), tz=dt.UTC)
    if kafka_type == "float64":
        return rng.random()
    raise ValueError(kafka_type)


def random_entity(rng: random.Random, cls: type, depth: int = 0) -> Any:
    values: dict[str, Any] = {}
    for fld in fields(cls):
        inner, is_array, nullable = _unwrap(fld.type)
        if nullable and rng.random() < 0.15:
            values[fld.name] = None
        elif is_array:
            count = rng.choice([0, 1, 1, 2, 3]) if depth < 3 else 0
            if is_dataclass(inner):
                values[fld.name] = tuple(random_entity(rng, inner, depth + 1) for _ in range(count))
            else:
                kafka_type = fld.metadata["kafka_type"]
                values[fld.name] = tuple(_primitive(rng, kafka_type, fld.name) for _ in range(count))
        elif is_dataclass(inner):
            values[fld.name] = random_entity(rng, inner, depth + 1)
        else:
            values[fld.name] = _primitive(rng, fld.metadata["kafka_type"], fld.name)
    return cls(**values)


def valid_request(rng: random.Random, api_key: int, version: int) -> bytes | None:
    """One framed request with random values, or None when kio cannot encode what we drew."""
    try:
        body = random_entity(rng, codec(api_key, version).request_type)
        return encode_request(api_key, version, rng.randint(0, 1 << 30),
                              rng.choice([None, "fuzz"]), body)
    except (ValueError, TypeError, OverflowError, struct.error):
        return None


# Extreme values ------------------------------------------------------------------------------
# Well-formed requests at the edges of what they may ask: partition counts around the
# per-request cap (10,000) up to 2^31-1, fetch sizes from negative to 2^31-1. The broker must
# refuse or bound them without stalling the healthy client.
EXTREME_PARTITIONS = [2**31 - 1, 1 << 30, 1_000_000, 10_001, 10_000, 5_001, -2, -(2**31)]
EXTREME_FETCH_BYTES = [2**31 - 1, 1 << 30, 57671681, 0, -1, -(2**31)]


def extreme_request(rng: random.Random) -> bytes:
    """One CreateTopics, CreatePartitions or Fetch with extreme counts or sizes."""
    kind = rng.randrange(3)
    if kind == 0:
        cls = codec(19, 7).request_type
        topic_cls = _unwrap(next(f.type for f in fields(cls) if f.name == "topics"))[0]
        count = rng.choice(EXTREME_PARTITIONS)
        topics = tuple(topic_cls(name=f"x-{rng.randrange(1 << 30)}", num_partitions=count,
                                 replication_factor=-1, assignments=(), configs=())
                       for _ in range(rng.choice([1, 2, 3])))
        # Under the cap a creation really happens: validated only, to keep the run short.
        body: Any = cls(topics=topics, timeout=dt.timedelta(seconds=5),
                        validate_only=0 < count <= 10_000 or rng.random() < 0.5)
        return encode_request(19, 7, rng.randrange(1 << 30), "fuzz", body)
    if kind == 1:
        cls = codec(37, 3).request_type
        topic_cls = _unwrap(next(f.type for f in fields(cls) if f.name == "topics"))[0]
        count = rng.choice(EXTREME_PARTITIONS)
        topics = (topic_cls(name="healthy-topic", count=count, assignments=None),)
        body = cls(topics=topics, timeout=dt.timedelta(seconds=5),
                   validate_only=0 < count <= 10_000 or rng.random() < 0.5)
        return encode_request(37, 3, rng.randrange(1 << 30), "fuzz", body)
    cls = codec(1, 12).request_type
    topic_cls = _unwrap(next(f.type for f in fields(cls) if f.name == "topics"))[0]
    part_cls = _unwrap(next(f.type for f in fields(topic_cls) if f.name == "partitions"))[0]
    part = part_cls(partition=0, fetch_offset=rng.choice([0, -1, 2**63 - 1]),
                    partition_max_bytes=rng.choice(EXTREME_FETCH_BYTES),
                    current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1)
    body = cls(replica_id=-1, max_wait=dt.timedelta(0), min_bytes=1,
               max_bytes=rng.choice(EXTREME_FETCH_BYTES), isolation_level=0, session_id=0,
               session_epoch=-1, topics=(topic_cls(topic="healthy-topic", partitions=(part,)),),
               forgotten_topics_data=(), rack_id="")
    return encode_request(1, 12, rng.randrange(1 << 30), "fuzz", body)


# Mutations -----------------------------------------------------------------------------------

def mutate(rng: random.Random, frame: bytes) -> bytes:
    """Mutate the body (the api key and version stay, so the request reaches its decoder)."""
    payload = bytearray(frame[4:])
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        start = rng.randint(8, max(len(payload), 8))
        kind = rng.random()
        if kind < 0.3:
            payload[start:start + 4] = rng.choice(_COUNT_PATTERNS)
        elif kind < 0.45:
            payload[start:start + 2] = rng.choice(_SHORT_PATTERNS)
        elif kind < 0.65:
            pattern = rng.choice(_VARINT_PATTERNS)
            width = rng.choice([0, 1, len(pattern)])
            payload[start:start + width] = pattern
        elif kind < 0.8 and start < len(payload):
            payload[start] ^= 1 << rng.randint(0, 7)
        elif kind < 0.9:
            del payload[start:]
        else:
            payload[start:start] = rng.randbytes(rng.randint(1, 16))
    return struct.pack(">i", len(payload)) + bytes(payload)


# Running -------------------------------------------------------------------------------------

@dataclass
class FuzzResult:
    cases: int
    broker_alive: bool
    returncode: int | None
    healthy_errors: list[str]
    healthy_max_wait: float
    healthy_requests: int
    broker_rss_mib: float
    closed: int  # cases whose connection the broker closed
    answered: int
    seconds: float
    tracebacks: int  # in the broker's log: handler or encoder failures
    log_lines: int


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


def _advertised(bootstrap: str) -> list[tuple[int, int]]:
    with WireClient(bootstrap) as client:
        response = client.request(18, 3, client_software_name="fuzz", client_software_version="1")
    return [(k.api_key, v) for k in response.api_keys
            for v in range(k.min_version, k.max_version + 1) if _has_schema(k.api_key, v)]


def _has_schema(api_key: int, version: int) -> bool:
    """kio knows the version (Produce v0-2 are advertised but refused: KAFKA-18659)."""
    try:
        codec(api_key, version)
    except KeyError:
        return False
    return True


def _one_case(host: str, port: int, frame: bytes) -> str:
    """'answered', 'closed' or 'parked'."""
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.settimeout(CASE_TIMEOUT)
        try:
            sock.sendall(frame)
            data = sock.recv(4)
        except TimeoutError:
            return "parked"
        except (ConnectionResetError, BrokenPipeError):
            return "closed"
        return "answered" if data else "closed"


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run_fuzz(cases: int, seed: int = 1, workers: int = 8,
             broker_log: str | None = None) -> FuzzResult:
    """Send ``cases`` requests; the broker's log goes to ``broker_log`` (default: a temp file)."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="kafkette-fuzz-") as tmp:
        config = test_config(tmp, **{"auto.create.topics.enable": "false"})
        log_path = Path(broker_log or os.path.join(tmp, "broker.log"))
        with log_path.open("w") as log, \
                BrokerProcess(config, preexec_fn=_limit_address_space, stderr=log) as proc:
            versions = _advertised(proc.bootstrap)
            frames: list[bytes] = []
            while len(frames) < cases:
                if rng.random() < 0.02:
                    frames.append(extreme_request(rng))
                    continue
                frame = valid_request(rng, *rng.choice(versions))
                if frame is not None:
                    frames.append(mutate(rng, frame) if rng.random() < 0.9 else frame)
            outcomes: dict[str, int] = {"answered": 0, "closed": 0, "parked": 0}
            lock = threading.Lock()
            started = time.monotonic()
            with HealthyClient(proc.bootstrap) as healthy:
                healthy.start()

                def worker(part: list[bytes]) -> None:
                    for frame in part:
                        if proc.proc is None or proc.proc.poll() is not None:
                            return
                        try:
                            outcome = _one_case(proc.host, proc.port, frame)
                        except OSError:
                            outcome = "closed"
                        with lock:
                            outcomes[outcome] += 1

                threads = [threading.Thread(target=worker, args=(frames[i::workers],))
                           for i in range(workers)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                alive = proc.proc.poll() is None
                if alive:
                    healthy.wait_rounds(3)
            assert proc.proc is not None
            log_text = log_path.read_text(errors="replace")
            return FuzzResult(
                cases=cases, broker_alive=alive, returncode=proc.proc.poll(),
                healthy_errors=healthy.errors, healthy_max_wait=healthy.max_wait,
                healthy_requests=healthy.requests,
                broker_rss_mib=_rss_mib(proc.proc.pid) if alive else 0.0,
                closed=outcomes["closed"], answered=outcomes["answered"],
                seconds=time.monotonic() - started, tracebacks=log_text.count("Traceback"),
                log_lines=log_text.count("\n"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int,
                        default=int(os.environ.get("KAFKETTE_FUZZ_CASES", "100000")))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--broker-log", default=None, help="file for the broker's log")
    args = parser.parse_args()
    result = run_fuzz(args.cases, args.seed, args.workers, broker_log=args.broker_log)
    print(result)
    if not result.broker_alive or result.healthy_errors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
