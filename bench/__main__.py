"""``python -m bench all [--peer tansu] [--peer noida] [--baseline REF] [--runs N] [--only a,b]
[--scaling] [--scaling-groups 10,1000,10000] [--scaling-members 10,100,500]
[--scaling-replay 100k,1M,5M]``.

Runs every figure of bench/figures against kafkette and the named peers (installed into the
bench-only venv ``.kafkette-bench/venv`` on first use), interleaving targets run by run, prints
each figure as it finishes and writes the table to bench/RESULTS.md.

- ``--baseline REF`` (repeatable) adds the target ``kafkette@REF``: kafkette as of that git ref,
  from a detached worktree under ``.kafkette-bench/trees/`` (created once, reused), started with
  the same command and interpreter; it gets ratio columns like a peer (e.g. ``--baseline
  c95cc66``, the "main" of the performance issue).
- Load figures report the broker's CPU µs per request beside throughput, and the group figures
  its CPU ms over the measured interval, for every target (the PID is the broker's own).
- Figures with a machine baseline (start-up: ``import asyncio, uvloop``; flush1: the disk's
  fdatasync rate) print kafkette/baseline, run by run.
- The scaling table (RSS and heartbeat CPU at 10/1,000/10,000 groups, rebalance time and broker
  CPU at 10/100/500 members, replay at 100k/1M/5M offsets) is slow and opt-in: ``--scaling``
  adds it to the default figures, ``--only scaling`` runs only it (or name single ones,
  ``--only scale-rebalance``); ``--scaling-*`` set its sizes (``''`` drops a part).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from bench.figures import all_figures
from bench.figures.runner import (
    FigureResult,
    Stat,
    baseline_ratio,
    cell,
    log,
    print_result,
    ratio_cell,
    run_figure,
)
from bench.peers import (
    OVERRIDES_ENV,
    PEERS,
    PROFILE_ENV,
    TARGETS,
    PeerUnavailable,
    Target,
    baseline_target,
    ensure_peers,
)
from bench.stats import machine

RESULTS = Path(__file__).with_name("RESULTS.md")
MARKER = "<!-- analysis: kept when the table above is regenerated -->"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["all", "list"], help="all: run the figures")
    parser.add_argument("--peer", action="append", default=[], choices=PEERS,
                        help="also measure this broker (repeatable)")
    parser.add_argument("--runs", type=int, default=5, help="measured runs per figure (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured runs first (default 1)")
    parser.add_argument("--baseline", action="append", default=[], metavar="REF",
                        help="also measure kafkette at git REF (target kafkette@REF; repeatable)")
    parser.add_argument("--only", default="",
                        help="comma-separated figure names; 'scaling' = every scaling figure")
    parser.add_argument("--scaling", action="store_true",
                        help="also run the (slow) scaling figures")
    parser.add_argument("--scaling-groups", default="10,1000,10000", metavar="N,N,...",
                        help="group counts of the scaling table (default 10,1000,10000)")
    parser.add_argument("--scaling-members", default="10,100,500", metavar="N,N,...",
                        help="group sizes of the scaling rebalance (default 10,100,500)")
    parser.add_argument("--scaling-replay", default="100k,1M,5M", metavar="N,N,...",
                        help="offset counts of the scaling replay (default 100k,1M,5M; "
                             "multiples of 1000)")
    parser.add_argument("--out", default=str(RESULTS), help="markdown file to write ('' = none)")
    parser.add_argument("--kafkette-override", action="append", default=[], metavar="KEY=VALUE",
                        help="extra kafkette config (default: kafkette's own defaults)")
    parser.add_argument("--profile", metavar="DIR",
                        help="run kafkette under cProfile, write .prof files to DIR and print "
                             "the top functions (implies --out '')")
    return parser


def loop_description() -> str:
    from kafkette.broker.cli.loop import loop_name

    return loop_name()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so every started broker is stopped by its finally block.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # Client libraries log every rebalance step; the figures report what matters.
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    from bench.figures.scaling import parse_counts

    sizes = {key: parse_counts(text) if text else ()
             for key, text in (("groups", args.scaling_groups), ("members", args.scaling_members),
                               ("replay", args.scaling_replay))}
    figures = all_figures(sizes)
    if args.command == "list":
        for fig in figures:
            print(f"{fig.name:18s} {fig.title}{'  [scaling, opt-in]' if fig.scaling else ''}")
        return 0
    if args.only:
        wanted = set(args.only.split(","))
        if "scaling" in wanted:
            wanted |= {f.name for f in figures if f.scaling}
            wanted.discard("scaling")
        unknown = wanted - {f.name for f in figures}
        if unknown:
            print(f"unknown figure(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        figures = [f for f in figures if f.name in wanted]
    elif not args.scaling:
        figures = [f for f in figures if not f.scaling]
    os.environ[OVERRIDES_ENV] = "\n".join(args.kafkette_override)
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
        os.environ[PROFILE_ENV] = os.path.abspath(args.profile)
        args.out = ""
    peers = list(dict.fromkeys(args.peer))
    targets: list[Target] = [TARGETS["kafkette"]]
    for ref in dict.fromkeys(args.baseline):
        target = baseline_target(ref)
        TARGETS[target.name] = target
        targets.append(target)
    unavailable: dict[str, str] = {}
    try:
        ensure_peers(peers)
        targets += [TARGETS[p] for p in peers]
    except PeerUnavailable as exc:
        for p in peers:
            unavailable[p] = str(exc)
        log(f"bench: peers unavailable: {exc}")
    started = time.perf_counter()
    log(f"bench: {machine()}, loop {loop_description()}; targets: "
        f"{', '.join(t.name for t in targets)}; {args.runs} runs after {args.warmup} warm-up")
    results: list[FigureResult] = []
    for fig in figures:
        log(f"bench: {fig.name} ...")
        result = run_figure(fig, targets, args.runs, args.warmup)
        for name, why in unavailable.items():
            result.na[name] = why
        print_result(result, targets)
        results.append(result)
    total = time.perf_counter() - started
    print(f"total {total:.0f}s", flush=True)
    if args.profile:
        print_profiles(Path(args.profile))
    if args.out:
        command = "python -m bench " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        write_markdown(Path(args.out), results, [t.name for t in targets] + list(unavailable),
                       command, args, total)
        print(f"wrote {args.out}")
    return 0


def print_profiles(folder: Path, top: int = 30) -> None:
    import pstats

    files = sorted(folder.glob("kafkette-*.prof"))
    if not files:
        print(f"no profiles in {folder}")
        return
    stats = pstats.Stats(*map(str, files))
    print(f"\n== kafkette profile ({len(files)} process(es)), by own time")
    stats.sort_stats("tottime").print_stats(top)
    print("== by cumulative time")
    stats.sort_stats("cumulative").print_stats(top)


def write_markdown(path: Path, results: list[FigureResult], names: list[str], command: str,
                   args: argparse.Namespace, total: float) -> None:
    peers = [n for n in names if n != "kafkette"]
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# kafkette benchmarks",
        "",
        f"- Date: {now}",
        f"- Machine: {machine()}; kafkette event loop: {loop_description()}",
        f"- Command: `{command}` (repository root)",
        f"- Runs: median of {args.runs} measured runs after {args.warmup} warm-up; "
        f"cells are `median (min–max)`. Whole run: {total:.0f} s.",
        "- Ratios are kafkette/peer computed pair by pair (targets interleaved run by run, "
        "A B C A B C …) and summarised the same way; `ahead` means kafkette is better on that row. "
        "A `kafkette@REF` target is kafkette as of git REF (`--baseline REF`), compared like a "
        "peer. Where a figure has a machine baseline, its column also gives kafkette/baseline, "
        "run by run.",
        "",
    ]
    if args.runs < 5:
        lines += [f"**Reduced run:** only {args.runs} measured runs per figure (≥ 5 is the "
                  "standard); treat the spreads with care.", ""]
    lines += ["Targets (each a child process on a loopback port, fresh data directory, ready once "
              "ApiVersions and Metadata answer, stopped by PID):", ""]
    for name in names:
        target = TARGETS[name]
        argv = " ".join(target.command_preview())
        lines.append(f"- **{name}**: {target.description} — `{argv}`")
    lines.append("")
    header = ["figure", "unit", "kafkette"]
    for peer in peers:
        header += [peer, f"kafkette/{peer}"]
    header.append("baseline")
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    footnotes: list[str] = []

    def na(result: FigureResult, name: str) -> str:
        why = result.na[name]
        if why not in footnotes:
            footnotes.append(why)
        return f"n/a [{footnotes.index(why) + 1}]"

    for result in results:
        fig = result.figure
        for rr in result.rows:
            row = rr.row
            better = "↑" if row.higher_is_better else "↓"
            cells = [f"{row.label}", f"{row.unit} {better}"]
            cells.append(na(result, "kafkette") if "kafkette" in result.na
                         else cell(rr.stat("kafkette"), row.scale))
            for peer in peers:
                if peer in result.na:
                    cells += [na(result, peer), "—"]
                    continue
                value = cell(rr.stat(peer), row.scale)
                note = fig.note(peer, row.key)
                if note:
                    if note not in footnotes:
                        footnotes.append(note)
                    value += f" [{footnotes.index(note) + 1}]"
                cells.append(value)
                cells.append("—" if "kafkette" in result.na
                             else ratio_cell(rr.ratio("kafkette", peer), row))
            base = result.baseline.get(row.key)
            ratio = baseline_ratio(result, rr)
            cells.append((f"{cell(Stat.of(base), row.scale)} ({fig.baseline_label})"
                          + (f"; kafkette/baseline {ratio.median:.2f}× "
                             f"({ratio.low:.2f}–{ratio.high:.2f})" if ratio else ""))
                         if base else "")
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "↓ lower is better, ↑ higher is better.", ""]
    if footnotes:
        lines += ["Notes:", ""]
        lines += [f"{i}. {text}" for i, text in enumerate(footnotes, 1)]
        lines.append("")
    lines += ["## What each figure measures", ""]
    # One entry per module (the scaling figures share theirs; the scaling replays use replay's).
    titles: dict[str, list[str]] = {}
    for result in results:
        titles.setdefault(type(result.figure).__module__, []).append(result.figure.title)
    for module, names in titles.items():
        paragraphs = (sys.modules[module].__doc__ or "").split("\n\n")
        body = paragraphs[1:] if len(paragraphs) > 1 else paragraphs
        lines += [f"- **{' / '.join(names)}** — " + " ".join(" ".join(body).split())]
    lines.append("")
    # Hand-written analysis below the marker survives a new run.
    if path.exists() and MARKER in path.read_text():
        lines += [MARKER + path.read_text().split(MARKER, 1)[1].rstrip(), ""]
    path.write_text("\n".join(lines))
    os.sync()


if __name__ == "__main__":
    sys.exit(main())
