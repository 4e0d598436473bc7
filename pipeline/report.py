"""Chart (lag over time per group) and markdown summary, from the job's tables.

Only small results reach the driver: per-group aggregates, the current lag, the rebalances and
the lag-over-time grid summed per group (a few hundred points each).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sized
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .lag import Tables

_MAX_GROUPS = 12


def lag_series(lag_over_time: DataFrame) -> pd.DataFrame:
    """Total lag per group at each grid time (the grid is shared, so partitions line up)."""
    return (lag_over_time.groupBy("group", "time").agg(F.sum("lag").alias("lag"))
            .orderBy("group", "time").toPandas())


def commit_rate(commits: int, first: pd.Timestamp, last: pd.Timestamp) -> str:
    """Offset commits per second between a group's first and last commit. Under one second there
    is no rate to speak of (8 commits in 1 ms are not 8000/s): '-'."""
    seconds = (last - first).total_seconds()
    return f"{commits / seconds:.2f}" if seconds >= 1 else "-"


def time_format(span_seconds: float) -> str:
    """One strftime format for every tick of an axis spanning ``span_seconds``."""
    if span_seconds < 10:
        return "%H:%M:%S.%f"  # cut to milliseconds by the formatter
    if span_seconds <= 600:
        return "%H:%M:%S"
    if span_seconds <= 2 * 86400:
        return "%H:%M"
    return "%Y-%m-%d %H:%M"


def merge_marks(marks: list[tuple[float, str, str]], min_gap: float) -> list[tuple[float, str, str]]:
    """Generation marks closer than ``min_gap`` (simultaneous rebalances) share one label, one line
    each, instead of printing over each other; the label sits at the first mark's time."""
    merged: list[tuple[float, list[str], set[str]]] = []
    for x, label, color in sorted(marks, key=lambda m: m[0]):
        if merged and x - merged[-1][0] < min_gap:
            merged[-1][1].append(label)
            merged[-1][2].add(color)
        else:
            merged.append((x, [label], {color}))
    return [(x, "\n".join(labels), colors.pop() if len(colors) == 1 else "black")
            for x, labels, colors in merged]


def write_chart(series: pd.DataFrame, rebalances: pd.DataFrame, path: str) -> None:
    import matplotlib.pyplot as plt

    fig = chart(series, rebalances)
    fig.savefig(path)
    plt.close(fig)


def chart(series: pd.DataFrame, rebalances: pd.DataFrame) -> Any:
    """The lag chart as a matplotlib figure (the caller saves and closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(10, 5), dpi=110)
    groups = list(series.groupby("group")["lag"].max().sort_values(ascending=False).index)
    shown = groups[:_MAX_GROUPS]
    marks = []
    for i, group in enumerate(shown):
        g = series[series["group"] == group]
        color = f"C{i % 10}"
        ax.plot(g["time"], g["lag"], color=color, label=group)
        prefix = f"{group} " if len(shown) > 1 else ""
        for _, r in rebalances[rebalances["group"] == group].iterrows():
            if r["state"] == "Stable":
                label = f"{prefix}gen {r['generation']}: {r['member_count']} member(s)"
            elif r["state"] == "Empty" and r["generation"]:
                label = f"{prefix}gen {r['generation']}: empty"
            else:
                continue  # the record of a newly created group
            ax.axvline(r["stable_time"], color=color, linestyle=":", alpha=0.7)
            marks.append((mdates.date2num(r["stable_time"]), label, color))
    lo, hi = ax.get_xlim()
    for x, label, color in merge_marks(marks, (hi - lo) * 0.02):
        ax.annotate(label, (x, 0), xycoords=("data", "axes fraction"), color=color,
                    rotation=90, fontsize=7, xytext=(2, 4), textcoords="offset points")
    ax.set_title("Consumer lag per group (sum over partitions); dotted: group generations")
    span = (hi - lo) * 86400
    fmt = time_format(span)

    def tick(value: float, _pos: int) -> str:
        text = mdates.num2date(value).strftime(fmt)
        return text[:-3] if fmt.endswith("%f") else text

    ax.xaxis.set_major_locator(mdates.AutoDateLocator(minticks=3, maxticks=8))
    ax.xaxis.set_major_formatter(FuncFormatter(tick))
    day = mdates.num2date(lo).strftime("%Y-%m-%d")
    ax.set_xlabel(f"time (UTC, {day})" if "%Y" not in fmt else "time (UTC)")
    ax.set_ylabel("lag (records)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if groups:
        ax.legend(title="group", fontsize=8)
    fig.tight_layout()
    return fig


def _table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return lines


def _size(items: Sized | None) -> int:
    return 0 if items is None else len(items)


def write_summary(tables: Tables, rebalances: pd.DataFrame, series: pd.DataFrame, path: str,
                  log_dirs: str) -> None:
    per_group: pd.DataFrame = (tables.commits.filter(~F.col("tombstone")).groupBy("group")
                 .agg(F.count(F.lit(1)).alias("commits"),
                      F.countDistinct("topic", "partition").alias("partitions"),
                      F.min("commit_time").alias("first"), F.max("commit_time").alias("last"))
                 .orderBy("group").toPandas())
    at_commit_df: pd.DataFrame = (tables.lag.groupBy("group").agg(F.max("lag").alias("max_lag"))
                                  .toPandas())
    at_commit = at_commit_df.set_index("group")["max_lag"].to_dict()
    over_time = series.groupby("group")["lag"].max().to_dict()
    current: pd.DataFrame = tables.current_lag.orderBy("group", "topic", "partition").toPandas()
    lines = [f"# Consumer groups in {log_dirs}", ""]
    rows = []
    for _, g in per_group.iterrows():
        rate = commit_rate(g["commits"], g["first"], g["last"])
        cur = current[current["group"] == g["group"]]["lag"]
        rebal = rebalances[(rebalances["group"] == g["group"]) & (rebalances["state"] == "Stable")
                           & (rebalances["generation"] != rebalances["previous_generation"])]
        peak = over_time.get(g["group"])
        rows.append((g["group"], g["partitions"], g["commits"], rate,
                     None if peak is None or pd.isna(peak) else int(peak),
                     at_commit.get(g["group"]),
                     int(cur.sum()) if len(cur) and cur.notna().any() else None, len(rebal)))
    lines += _table(["group", "partitions", "offset commits", "commits/s", "max lag",
                     "max lag at a commit (one partition)", "current lag", "rebalances"], rows)
    lines += ["", "## Current lag", ""]
    lines += _table(["group", "topic", "partition", "committed", "log end", "lag"],
                    current[["group", "topic", "partition", "committed_offset", "log_end_offset",
                             "lag"]].itertuples(index=False))
    shares: pd.DataFrame = tables.share_lag.orderBy("group", "topic", "partition").toPandas()
    if len(shares):
        lines += ["", "## Share-group lag", ""]
        lines += _table(["share group", "topic", "partition", "start offset (SPSO)",
                         "acknowledged or archived past it", "log end", "lag"],
                        shares[["group", "topic", "partition", "start_offset",
                                "delivery_complete_count", "log_end_offset",
                                "lag"]].itertuples(index=False))
    lines += ["", "## Group history", ""]
    hist = []
    for _, r in rebalances.iterrows():
        members = r["members"] if r["members"] is not None else []
        clients = sorted({m["client_id"] for m in members})
        not_stable = r["not_stable_ms"]
        if r["state"] == "Stable" and not pd.isna(not_stable):
            not_stable = f"{int(not_stable)}" + ("" if r["not_stable_exact"] else " (at least)")
        else:
            not_stable = ""
        hist.append((r["group"], r["stable_time"], r["generation"], r["state"],
                     r["member_count"], ", ".join(clients), _size(r["joined"]),
                     _size(r["left"]), not_stable))
    lines += _table(["group", "time", "generation", "state", "members", "clients", "joined",
                     "left", "not Stable (ms)"], hist)
    lines += ["", "Lag = log end offset at a time T (1 + the last offset with a timestamp <= T)"
              " - the offset committed by T; 'max lag' is the sum over a group's partitions,"
              " sampled on the lag_over_time grid. 'commits/s': offset commits between a group's"
              " first and last commit per second, '-' when they span less than a second."
              " 'at least': Kafka does not persist when a"
              " rebalance started, only when its join phase ended.", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_reports(tables: Tables, out: str, log_dirs: str) -> dict[str, str]:
    rebalances = tables.rebalances.orderBy("group", "log_partition", "log_offset").toPandas()
    series = lag_series(tables.lag_over_time)
    chart = os.path.join(out, "lag.png")
    summary = os.path.join(out, "summary.md")
    write_chart(series, rebalances, chart)
    write_summary(tables, rebalances, series, summary, log_dirs)
    return {"chart": chart, "summary": summary}
