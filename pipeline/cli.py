"""``kafkette pipeline lag --log-dirs DIR --out OUT [--master local[*]|spark://...]``."""

from __future__ import annotations

import argparse
import os
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
            say: Callable[[str], object] = print) -> dict[str, str]:
    """Run the lag job; returns the paths written. ``spark`` reuses an existing session."""
    from . import lag, report
    from .spark import register, session

    dirs = ",".join(os.path.abspath(d) for d in log_dirs.split(",") if d)
    os.makedirs(out, exist_ok=True)
    if spark is None:
        spark = session(master, conf)
    else:
        register(spark)
    started = time.monotonic()
    tables = lag.build(spark, dirs, rate_window)
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
    run_lag(args.log_dirs, args.out, args.master, args.rate_window, conf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
