"""Decode throughput of the ``kafkette`` Spark data source (records/s), local[2] by default.

    python -m bench.pipeline_decode [--gb 1.0] [--runs 5] [--codec none|lz4|zstd|snappy|gzip]

Writes a topic log of ``--gb`` GB (Kafka's on-disk format: RecordBatch v2 segments built with
protocol.records.build_batch, 1 GiB segments like Kafka's default segment.bytes) into a temporary
log dir, then times a Spark action that materialises every column of every record
(``count(*)``, ``sum(length(key))``, ``sum(length(value))``, ``sum(size(headers))``,
``max(offset)``, ``max(timestamp)``). Prints the median of ``--runs`` runs and, as the baseline
measured in the same run, one pass of the same source with ``decoder=reference`` (one Python
``Record`` per record via protocol.records.decode_records) and the single-core decode rates
without Spark.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time

from kafkette.protocol.records import (
    COMPRESSION_NAMES,
    Record,
    build_batch,
    decode_records,
    iter_batches,
)

SEGMENT_BYTES = 1 << 30
RECORDS_PER_BATCH = 128  # ~16 KiB batches: the Java producer's default batch.size
VALUE_BYTES = 100
TOPIC = "bench"


def write_log(log_dir: str, target_bytes: int, codec: int) -> tuple[int, int]:
    """Write ``target_bytes`` of batches into ``<log_dir>/bench-0``; return (records, bytes)."""
    rng = random.Random(1)
    pdir = os.path.join(log_dir, f"{TOPIC}-0")
    os.makedirs(pdir, exist_ok=True)
    # Half random, half repeated bytes: compressible, as real payloads tend to be.
    values = [rng.randbytes(VALUE_BYTES // 2) + bytes(VALUE_BYTES // 2) for _ in range(64)]
    offset = written = 0
    ts = 1_700_000_000_000
    seg = None
    seg_size = 0
    while written < target_bytes:
        if seg is None or seg_size >= SEGMENT_BYTES:
            if seg:
                seg.close()
            seg = open(os.path.join(pdir, f"{offset:020d}.log"), "wb")  # noqa: SIM115
            seg_size = 0
        records = [Record(offset + i, ts + i // 16, b"key-%08d" % (offset + i), values[i % 64],
                          [("trace", b"abc")] if i % 32 == 0 else [])
                   for i in range(RECORDS_PER_BATCH)]
        batch = build_batch(records, base_offset=offset, compression=codec)
        seg.write(batch)
        seg_size += len(batch)
        written += len(batch)
        offset += RECORDS_PER_BATCH
        ts += 8
    if seg:
        seg.close()
    return offset, written


def python_rates(log_dir: str, limit: int = 64 << 20) -> tuple[float, float]:
    """Single-core records/s without Spark: the fast path and protocol.records, on 64 MB."""
    from kafkette.pipeline.fastdecode import decode_batches

    pdir = os.path.join(log_dir, f"{TOPIC}-0")
    path = os.path.join(pdir, sorted(os.listdir(pdir))[0])
    with open(path, "rb") as f:
        data = f.read(limit)
    def best(decode: object) -> float:  # best of 3: the first pass pays for page faults
        rates = []
        for _ in range(3):
            t = time.perf_counter()
            n = decode()
            rates.append(n / (time.perf_counter() - t))
        return max(rates)

    fast = best(lambda: sum(len(c) for c in decode_batches(data)))
    ref = best(lambda: sum(len(decode_records(b)) for _, b in iter_batches(data)))
    return fast, ref


def timed(spark: object, log_dir: str, **options: str) -> tuple[float, int]:
    reader = spark.read.format("kafkette")
    for key, value in options.items():
        reader = reader.option(key, value)
    df = reader.load(log_dir)
    t = time.perf_counter()
    exprs = ["count(*) AS n", "max(offset)", "max(timestamp)"]
    if "key" in df.columns:
        exprs += ["sum(length(key))", "sum(length(value))", "sum(size(headers))"]
    row = df.selectExpr(*exprs).first()
    return time.perf_counter() - t, row["n"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--codec", default="none", choices=list(COMPRESSION_NAMES.values()))
    parser.add_argument("--keep", help="write the log here and keep it (default: temp dir)")
    args = parser.parse_args()
    codec = {v: k for k, v in COMPRESSION_NAMES.items()}[args.codec]

    log_dir = args.keep or tempfile.mkdtemp(prefix="kafkette-bench-")
    try:
        t = time.perf_counter()
        existing = os.path.isdir(os.path.join(log_dir, f"{TOPIC}-0"))
        if not existing:
            records, size = write_log(log_dir, int(args.gb * 1e9), codec)
            print(f"wrote {records:,} records, {size / 1e9:.2f} GB ({args.codec}) in "
                  f"{time.perf_counter() - t:.0f}s to {log_dir}")
        fast1, ref1 = python_rates(log_dir)
        print(f"one core, no Spark: fast path {fast1:,.0f} rec/s; protocol.records "
              f"{ref1:,.0f} rec/s ({fast1 / ref1:.1f}x)")

        from kafkette.pipeline.spark import session

        spark = session(args.master, {"spark.ui.enabled": "false",
                                      "spark.ui.showConsoleProgress": "false"})
        spark.sparkContext.setLogLevel("ERROR")
        secs, n = timed(spark, log_dir)  # warm-up: page cache, Python workers
        print(f"warm-up: {n:,} records in {secs:.1f}s")
        rates = []
        for i in range(args.runs):
            secs, n = timed(spark, log_dir)
            rates.append(n / secs)
            print(f"run {i + 1}: {n:,} records in {secs:.2f}s = {n / secs:,.0f} rec/s")
        median = statistics.median(rates)
        secs, n = timed(spark, log_dir, columns="meta")
        meta = n / secs
        secs, n = timed(spark, log_dir, decoder="reference")
        ref = n / secs
        print(f"\n{args.master}, {args.codec}: median {median:,.0f} records/s over {args.runs} runs"
              f" (all columns); baseline decoder=reference {ref:,.0f} records/s"
              f" -> {median / ref:.1f}x; columns=meta {meta:,.0f} records/s")
        spark.stop()
    finally:
        if not args.keep:
            shutil.rmtree(log_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
