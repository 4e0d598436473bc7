"""``kafkette pipeline lag --log-dirs DIR --out OUT [--master local[*]|spark://...]``."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafkette pipeline",
                                     description="Spark jobs over kafkette's logs")
    sub = parser.add_subparsers(dest="job", required=True)
    lag = sub.add_parser("lag", help="consumer lag, commit rates and rebalances per group")
    lag.add_argument("--log-dirs", required=True,
                     help="the broker's log.dirs (comma-separated), read directly from disk")
    lag.add_argument("--out", required=True, help="output directory (Parquet, lag.png, summary.md)")
    lag.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    lag.add_argument("--rate-window", default="1 minute",
                     help="window for the commit_rates table, a Spark interval (default 1 minute)")
    lag.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                     help="extra Spark config (repeatable)")
    return parser


def run_lag(log_dirs: str, out: str, master: str = "local[*]", rate_window: str = "1 minute",
            conf: dict[str, str] | None = None, spark: SparkSession | None = None,
            say: Callable[[str], object] = print,
            own_process_group: bool = False) -> dict[str, str]:
    """Run the lag job; returns the paths written. ``spark`` reuses an existing session.
    ``own_process_group`` (the command line): Spark runs in a process group of its own and
    Ctrl-C raises KeyboardInterrupt here, without pyspark's cancel-through-py4j tracebacks."""
    from . import lag, report
    from .spark import register, session

    dirs = ",".join(os.path.abspath(d) for d in log_dirs.split(",") if d)
    os.makedirs(out, exist_ok=True)
    if spark is None:
        spark = session(master, conf, own_process_group=own_process_group)
        if own_process_group:
            # pyspark's SIGINT handler cancels the jobs through py4j while the interrupted
            # call still holds the connection, and prints a page of tracebacks.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            quiet_interrupted_gateway_calls()
    else:
        register(spark)
    started = time.monotonic()
    tables = lag.build(spark, dirs, rate_window).materialized()
    written = {}
    for name, df in tables.items():
        path = os.path.join(out, f"{name}.parquet")
        say(f"[kafkette pipeline] writing {name} -> {path}")
        df.write.mode("overwrite").parquet(path)
        written[name] = path
    say("[kafkette pipeline] writing lag.png and summary.md")
    written.update(report.write_reports(tables, out, dirs))
    tables.release()
    say(f"[kafkette pipeline] done in {time.monotonic() - started:.1f}s: {written['chart']}, "
        f"{written['summary']}")
    return written


class _NotInterrupts(logging.Filter):
    """Drops log records that carry a KeyboardInterrupt (py4j logs one per interrupted call)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt))


def quiet_interrupted_gateway_calls() -> None:
    """Root log records go to stderr as before, except py4j's traceback of the call Ctrl-C
    interrupted (the user asked for the stop; ``main`` says so in one line)."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
        handler.addFilter(_NotInterrupts())
        root.addHandler(handler)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("kafkette pipeline needs the pipeline extra: pip install 'kafkette[pipeline]'",
              file=sys.stderr)
        return 2
    conf = dict(kv.split("=", 1) for kv in args.conf)
    for d in args.log_dirs.split(","):
        if d and not os.path.isdir(d):
            print(f"kafkette pipeline: log dir {d!r} does not exist", file=sys.stderr)
            return 2
    try:
        run_lag(args.log_dirs, args.out, args.master, args.rate_window, conf,
                own_process_group=True)
    except KeyboardInterrupt:
        from .spark import SPARK_JVMS

        for jvm in SPARK_JVMS:  # its Python workers end with it
            jvm.kill()
        print(f"kafkette pipeline: interrupted; {args.out} may hold part of the output",
              file=sys.stderr, flush=True)
        sys.stdout.flush()
        # Not sys.exit: pyspark's exit hooks would talk to the gateway just killed.
        os._exit(130)
    return 0


if __name__ == "__main__":
    sys.exit(main())
