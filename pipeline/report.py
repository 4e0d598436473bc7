"""Chart (lag over time per group) and markdown summary, from the job's tables.

Only small results reach the driver: per-group aggregates, the current lag, the rebalances and
the lag-over-time grid summed per group (a few hundred points each).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .lag import Tables

_MAX_GROUPS = 12


def lag_series(lag_over_time: DataFrame) -> pd.DataFrame:
    """Total lag per group at each grid time (the grid is shared, so partitions line up)."""
    return (lag_over_time.groupBy("group", "time").agg(F.sum("lag").alias("lag"))
            .orderBy("group", "time").toPandas())


def write_chart(series: pd.DataFrame, rebalances: pd.DataFrame, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5), dpi=110)
    groups = list(series.groupby("group")["lag"].max().sort_values(ascending=False).index)
    marks = []
    for i, group in enumerate(groups[:_MAX_GROUPS]):
        g = series[series["group"] == group]
        color = f"C{i % 10}"
        ax.plot(g["time"], g["lag"], color=color, label=group)
        for _, r in rebalances[rebalances["group"] == group].iterrows():
            if r["state"] == "Stable":
                label = f"gen {r['generation']}: {r['member_count']} member(s)"
            elif r["state"] == "Empty" and r["generation"]:
                label = f"gen {r['generation']}: empty"
            else:
                continue  # the record of a newly created group
            ax.axvline(r["stable_time"], color=color, linestyle=":", alpha=0.7)
            marks.append((r["stable_time"], label, color))
    # Label the dotted lines, skipping labels that would print over the previous one.
    lo, hi = ax.get_xlim()
    last = None
    for when, label, color in sorted(marks, key=lambda m: m[0]):
        x = mdates.date2num(when)
        if last is not None and x - last < (hi - lo) * 0.02:
            continue
        last = x
        ax.annotate(label, (when, 0), xycoords=("data", "axes fraction"), color=color,
                    rotation=90, fontsize=7, xytext=(2, 4), textcoords="offset points")
    ax.set_title("Consumer lag per group (sum over partitions); dotted: group generations")
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel("lag (records)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if groups:
        ax.legend(title="group", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return lines


def _size(items: object) -> int:
    return 0 if items is None else len(items)


def write_summary(tables: Tables, rebalances: pd.DataFrame, series: pd.DataFrame, path: str,
                  log_dirs: str) -> None:
    per_group = (tables.commits.filter(~F.col("tombstone")).groupBy("group")
                 .agg(F.count(F.lit(1)).alias("commits"),
                      F.countDistinct("topic", "partition").alias("partitions"),
                      F.min("commit_time").alias("first"), F.max("commit_time").alias("last"))
                 .orderBy("group").toPandas())
    at_commit = (tables.lag.groupBy("group").agg(F.max("lag").alias("max_lag"))
                 .toPandas().set_index("group")["max_lag"].to_dict())
    over_time = series.groupby("group")["lag"].max().to_dict()
    current = tables.current_lag.orderBy("group", "topic", "partition").toPandas()
    lines = [f"# Consumer groups in {log_dirs}", ""]
    rows = []
    for _, g in per_group.iterrows():
        seconds = (g["last"] - g["first"]).total_seconds()
        rate = f"{g['commits'] / seconds:.2f}" if seconds > 0 else "-"
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
              " sampled on the lag_over_time grid. 'at least': Kafka does not persist when a"
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
