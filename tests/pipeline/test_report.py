"""summary.md's commit rate, the chart's generation labels and time ticks (no Spark needed)."""

from __future__ import annotations

import re

import pytest

pd = pytest.importorskip("pandas", reason="needs the pipeline extra: pip install -e '.[test,pipeline]'")
pytest.importorskip("matplotlib", reason="needs the pipeline extra")
pytest.importorskip("pyspark", reason="needs the pipeline extra")

from kafkette.pipeline.report import chart, commit_rate, merge_marks, time_format  # noqa: E402

T0 = pd.Timestamp("2026-11-25 10:00:00")


def test_commit_rate_needs_at_least_a_second():
    assert commit_rate(8, T0, T0 + pd.Timedelta(milliseconds=1)) == "-"  # was 8000.00
    assert commit_rate(1, T0, T0) == "-"
    assert commit_rate(6, T0, T0 + pd.Timedelta(seconds=3)) == "2.00"


def test_one_time_format_per_span():
    assert time_format(5) == "%H:%M:%S.%f"
    assert time_format(300) == "%H:%M:%S"
    assert time_format(3 * 3600) == "%H:%M"
    assert time_format(5 * 86400) == "%Y-%m-%d %H:%M"


def test_simultaneous_generations_share_one_label():
    marks = [(10.0, "a gen 2: 2 member(s)", "C0"), (10.001, "b gen 1: 1 member(s)", "C1"),
             (20.0, "a gen 3: 1 member(s)", "C0")]
    assert merge_marks(marks, 0.5) == [(10.0, "a gen 2: 2 member(s)\nb gen 1: 1 member(s)", "black"),
                                       (20.0, "a gen 3: 1 member(s)", "C0")]


def _series(groups, seconds):
    times = [T0 + pd.Timedelta(seconds=s) for s in range(seconds)]
    return pd.DataFrame([{"group": g, "time": t, "lag": i % 7} for g in groups
                         for i, t in enumerate(times)])


def _rebalances(rows):
    return pd.DataFrame([{"group": g, "state": "Stable", "generation": gen, "member_count": n,
                          "stable_time": T0 + pd.Timedelta(seconds=s)} for g, gen, n, s in rows])


@pytest.mark.parametrize("seconds", [4, 90, 3 * 3600])
def test_chart_labels_do_not_overlap_and_ticks_share_a_format(seconds):
    # Two groups rebalance at the same moment, a third a little later.
    rebalances = _rebalances([("billing", 1, 2, 1), ("audit", 1, 1, 1), ("billing", 2, 1, seconds - 1)])
    fig = chart(_series(["billing", "audit"], seconds), rebalances)
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if "gen" in t.get_text()]
    assert len(labels) == 2 and "billing gen 1" in labels[0].get_text() \
        and "audit gen 1" in labels[0].get_text()
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert not boxes[0].overlaps(boxes[1])
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert len(ticks) >= 2
    pattern = {4: r"\d\d:\d\d:\d\d\.\d{3}", 90: r"\d\d:\d\d:\d\d", 3 * 3600: r"\d\d:\d\d"}[seconds]
    assert all(re.fullmatch(pattern, t) for t in ticks), ticks
    assert ax.get_xlabel() == "time (UTC, 2026-11-25)"
