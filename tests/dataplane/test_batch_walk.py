"""The record walk of batch validation (DefaultRecord.readFrom for every record) gives the same
answer as a plain one-record-at-a-time reading, also for the records it checks a run at a time
(records of one layout): thousands of generated batches of uniform and mixed layouts, each also
with a byte changed, bytes cut or added, or a wrong record count."""

from __future__ import annotations

import random

import pytest

from kafkette.protocol.batch_validation import check_produced_batch, walk_records
from kafkette.protocol.record_errors import InvalidRecordError
from kafkette.protocol.records import build_batch


def _varint(value: int, width: int = 0) -> bytes:
    """Zigzag varint, padded with continuation bytes to ``width`` (non-canonical) if asked."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    while len(out) < width:
        out[-1] |= 0x80
        out.append(0)
    return bytes(out)


def _record(ts: int, delta: int, key: bytes | None, value: bytes | None,
            headers: list[tuple[bytes, bytes | None]], pad: int = 0) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += _varint(ts) + _varint(delta, pad)
    for field in (key, value):
        body += _varint(-1) if field is None else _varint(len(field)) + field
    body += _varint(len(headers))
    for hkey, hvalue in headers:
        body += _varint(len(hkey)) + hkey
        body += _varint(-1) if hvalue is None else _varint(len(hvalue)) + hvalue
    return _varint(len(body)) + bytes(body)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise InvalidRecordError("varint too long")


def reference(data: bytes, count: int) -> tuple[bool, bool]:
    """(offset deltas are 0..count-1, a key is null), read one field after the other."""
    if count * 7 > len(data):
        raise InvalidRecordError("premature EOF")
    sequential, null_key, pos = True, False, 0
    try:
        for index in range(count):
            size, pos = _read_varint(data, pos)
            if size < 0 or pos + size > len(data):
                raise InvalidRecordError("record size")
            end = pos + size
            pos += 1
            _ts, pos = _read_varint(data, pos)
            delta, pos = _read_varint(data, pos)
            sequential = sequential and delta == index
            key, pos = _read_varint(data, pos)
            null_key = null_key or key < 0
            pos += max(key, 0)
            value, pos = _read_varint(data, pos)
            pos += max(value, 0)
            headers, pos = _read_varint(data, pos)
            if headers < 0:
                raise InvalidRecordError("header count")
            for _ in range(headers):
                n, pos = _read_varint(data, pos)
                if n < 0:
                    raise InvalidRecordError("header key")
                n, pos = _read_varint(data, pos + n)
                pos += max(n, 0)
            if pos != end:
                raise InvalidRecordError("fields do not add up")
    except IndexError:
        raise InvalidRecordError("premature EOF") from None
    if pos != len(data):
        raise InvalidRecordError("bytes left")
    return sequential, null_key


def _outcome(fn, data: bytes, count: int):
    try:
        return fn(data, count)
    except InvalidRecordError:
        return "invalid"


def _walked(data: bytes, count: int) -> tuple[bool, bool]:
    """walk_records' answer and check_produced_batch's null-key flag for the same records."""
    sequential = walk_records(data, count)
    # Through the produce path too (uncompressed: the records are walked inside the batch).
    batch = bytearray(build_batch([(b"k", b"v")]))
    batch[57:61] = count.to_bytes(4, "big")
    batch[23:27] = (count - 1).to_bytes(4, "big")
    batch = bytes(batch[:61]) + data
    batch = batch[:8] + (len(batch) - 12).to_bytes(4, "big") + batch[12:]
    from kafkette.protocol.records import CRC_OFFSET, batch_crc

    fixed = bytearray(batch)
    fixed[CRC_OFFSET:CRC_OFFSET + 4] = batch_crc(fixed).to_bytes(4, "big")
    _, _, null_key = check_produced_batch(bytes(fixed))
    return sequential, null_key


def _batch(rnd: random.Random) -> tuple[bytes, int]:
    """Records in a few runs of one layout each (what producers send), sometimes mixed."""
    records = []
    index = 0
    for _run in range(rnd.choice((1, 1, 2, 3, 5))):
        n = rnd.choice((1, 3, 4, 5, 17, 63, 64, 65, 130, 300))
        key = rnd.choice((None, b"", b"k" * rnd.choice((1, 7, 70))))
        vsize = rnd.choice((0, 1, 10, 63, 64, 100, 1000, 9000))
        value = None if rnd.random() < 0.1 else bytes(rnd.randrange(256) for _ in range(8)) * (vsize // 8)
        headers = rnd.choice(([], [], [(b"h", b"1")], [(b"hh", None), (b"", b"x" * 70)]))
        ts_step = rnd.choice((0, 0, 1, 7))
        vary = rnd.random() < 0.2
        pad = rnd.choice((0, 0, 0, 0, 3))
        gap = rnd.random() < 0.1
        for i in range(n):
            v = value
            if vary and v is not None:
                v = v[: rnd.randrange(len(v) + 1)]
            delta = index + (5 if gap and i == n // 2 else 0)
            records.append(_record(i * ts_step, delta, key, v, headers, pad))
            index += 1
    return b"".join(records), len(records)


def _mutations(rnd: random.Random, data: bytes, count: int):
    yield data, count
    yield data, count + 1
    yield data, count - 1
    yield data[:-1], count
    yield data + b"\x00", count
    yield data + data[: len(data) // max(count, 1)], count + 1
    for _ in range(6):
        pos = rnd.randrange(len(data))
        yield data[:pos] + bytes((rnd.randrange(256),)) + data[pos + 1 :], count
    for _ in range(2):
        pos = rnd.randrange(len(data))
        yield data[:pos] + data[pos + 1 :], count


@pytest.mark.parametrize("seed", range(8))
def test_walk_matches_a_plain_reading(seed: int) -> None:
    rnd = random.Random(seed)
    checked = invalid = 0
    for _ in range(60):
        data, count = _batch(rnd)
        for mutated, n in _mutations(rnd, data, count):
            if n <= 0:
                continue
            want = _outcome(reference, mutated, n)
            got = _outcome(walk_records, mutated, n)
            assert got == (want if want == "invalid" else want[0]), (seed, n, mutated[:80])
            if want != "invalid":
                assert _walked(mutated, n) == want
            checked += 1
            invalid += want == "invalid"
    assert checked > 600 and 0 < invalid < checked  # both kinds were exercised


def test_a_bad_record_deep_in_a_run_is_found() -> None:
    """Every structural byte of a record in the middle of a long run of one layout."""
    records = [_record(i, i, b"key", b"v" * 100, [(b"h", b"x")]) for i in range(200)]
    data = b"".join(records)
    size = len(records[0])
    assert reference(data, 200) == (True, False) == _walked(data, 200)
    start = 150 * size
    for offset in range(size):
        for value in (0x00, 0x01, 0x7F, 0x80, 0xFF):
            mutated = data[: start + offset] + bytes((value,)) + data[start + offset + 1 :]
            want = _outcome(reference, mutated, 200)
            got = _outcome(walk_records, mutated, 200)
            assert got == (want if want == "invalid" else want[0]), (offset, value)


def test_null_keys_are_seen_in_runs() -> None:
    keyed = [_record(0, i, b"k", b"v", []) for i in range(100)]
    null = _record(0, 100, None, b"v", [])
    data = b"".join(keyed) + null + b"".join(_record(0, 101 + i, b"k", b"v", []) for i in range(50))
    assert _walked(data, 151) == (True, True)
    assert _walked(b"".join(keyed), 100) == (True, False)


def test_run_attempts_cost_linear_work(monkeypatch) -> None:
    """Records of one length whose layouts keep changing (key 1 + value 5 bytes, then key 2 +
    value 4, every 17 records) make every run attempt fail: the slots examined stay
    proportional to the records, not to records x attempts (a batch must not cost seconds)."""
    import kafkette.protocol.batch_validation as bv

    records = [_record(0, 0, b"k", b"vvvvv", []) if (i // 17) % 2 else
               _record(0, 0, b"kk", b"vvvv", []) for i in range(20000)]
    data = b"".join(records)
    examined = []
    same_layout = bv._same_layout
    monkeypatch.setattr(bv, "_same_layout", lambda d, pos, size, run, checks: (
        examined.append(run * len(checks)) or same_layout(d, pos, size, run, checks)))
    assert walk_records(data, 20000) is False  # offset deltas all 0
    assert examined and sum(examined) < 40 * 20000
    uniform = b"".join(_record(0, i, b"kk", b"vvvv", []) for i in range(20000))
    examined.clear()
    assert walk_records(uniform, 20000) is True
    assert sum(examined) < 4 * 20000 * 8
