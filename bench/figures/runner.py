"""Runs figures against targets, interleaved run by run (A B C A B C ...) so drift cancels."""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, field

from bench.figures.base import Context, Figure, NotApplicable, Row, reason
from bench.peers import Server, Target


@dataclass
class Stat:
    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Stat | None:
        if not values:
            return None
        return cls(statistics.median(values), min(values), max(values), len(values))


@dataclass
class RowResult:
    row: Row
    values: dict[str, list[float]] = field(default_factory=dict)  # target -> samples by run

    def stat(self, target: str) -> Stat | None:
        return Stat.of(self.values.get(target, []))

    def ratio(self, target: str, peer: str) -> Stat | None:
        """kafkette/peer, pair by pair over runs where both measured."""
        mine, theirs = self.values.get(target, []), self.values.get(peer, [])
        return Stat.of([a / b for a, b in zip(mine, theirs, strict=False) if b])


@dataclass
class FigureResult:
    figure: Figure
    rows: list[RowResult]
    na: dict[str, str] = field(default_factory=dict)  # target -> reason
    baseline: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0


def baseline_ratio(result: FigureResult, row: RowResult) -> Stat | None:
    """kafkette/baseline, run by run (the baseline is measured once per measured run)."""
    mine, base = row.values.get("kafkette", []), result.baseline.get(row.row.key, [])
    return Stat.of([a / b for a, b in zip(mine, base, strict=False) if b])


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_figure(fig: Figure, targets: list[Target], runs: int, warmup: int) -> FigureResult:
    started = time.perf_counter()
    result = FigureResult(fig, [RowResult(row) for row in fig.rows])
    servers: dict[str, Server] = {}
    states: dict[str, object] = {}
    alive: list[Target] = []
    for given in targets:
        try:
            target = fig.target_for(given)
            if not fig.fresh:
                server = target.spawn()
                servers[target.name] = server
                fig.check(server)
                states[target.name] = fig.prepare(server)
            alive.append(target)
        except Exception as exc:  # noqa: BLE001 - reported as n/a
            result.na[given.name] = reason(exc)
            log(f"  {fig.name} {given.name}: n/a ({result.na[given.name]})")
    try:
        for i in range(warmup + runs):
            is_warm = i < warmup
            for target in list(alive):
                ctx = Context(target, servers.get(target.name), states.get(target.name), i, is_warm)
                try:
                    values = fig.measure(ctx)
                except Exception as exc:  # noqa: BLE001 - reported as n/a
                    result.na[target.name] = reason(exc)
                    log(f"  {fig.name} {target.name}: n/a ({result.na[target.name]})")
                    alive.remove(target)
                    for row in result.rows:
                        row.values.pop(target.name, None)
                    continue
                if not is_warm:
                    for row in result.rows:
                        row.values.setdefault(target.name, []).append(values[row.row.key])
            log(f"  {fig.name}: {'warm-up' if is_warm else 'run'} {i + 1}/{warmup + runs} done "
                f"({time.perf_counter() - started:.0f}s)")
            if not is_warm:
                for key, value in fig.baseline().items():
                    result.baseline.setdefault(key, []).append(value)
    finally:
        for server in servers.values():
            server.close()
    result.seconds = time.perf_counter() - started
    return result


def fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def cell(stat: Stat | None, scale: float = 1.0) -> str:
    if stat is None:
        return "n/a"
    return (f"{fmt(stat.median * scale)} ({fmt(stat.low * scale)}–{fmt(stat.high * scale)})")


def ratio_cell(stat: Stat | None, row: Row) -> str:
    if stat is None:
        return "n/a"
    ahead = stat.median > 1 if row.higher_is_better else stat.median < 1
    mark = "ahead" if ahead else "behind"
    return f"{stat.median:.2f}× ({stat.low:.2f}–{stat.high:.2f}) {mark}"


def print_result(result: FigureResult, targets: list[Target]) -> None:
    fig = result.figure
    print(f"\n== {fig.title}  [{result.seconds:.0f}s]", flush=True)
    for rr in result.rows:
        row = rr.row
        better = "higher is better" if row.higher_is_better else "lower is better"
        print(f"  {row.label} [{row.unit}, {better}]")
        for target in targets:
            name = target.name
            if name in result.na:
                print(f"    {name:16s} n/a: {result.na[name]}")
                continue
            line = f"    {name:16s} {cell(rr.stat(name), row.scale)}"
            if name != "kafkette" and "kafkette" not in result.na:
                line += f"   kafkette/{name}: {ratio_cell(rr.ratio('kafkette', name), row)}"
            note = fig.note(name, row.key)
            if note:
                line += f"   [{note}]"
            print(line)
        if row.key in result.baseline:
            ratio = baseline_ratio(result, rr)
            print(f"    {'baseline':16s} {cell(Stat.of(result.baseline[row.key]), row.scale)}"
                  f"   ({fig.baseline_label})"
                  + (f"   kafkette/baseline: {ratio.median:.2f}× ({ratio.low:.2f}–{ratio.high:.2f})"
                     if ratio else ""))
    print(flush=True)


def skip_result(fig: Figure, targets: list[Target], why: str) -> FigureResult:
    result = FigureResult(fig, [RowResult(row) for row in fig.rows])
    for target in targets:
        result.na[target.name] = why
    return result


__all__ = ["FigureResult", "NotApplicable", "RowResult", "Stat", "baseline_ratio", "cell",
           "print_result",
           "ratio_cell", "run_figure", "skip_result"]
