"""Heartbeats/s while ``/metrics`` is scraped every second, with 1 000 groups (kafkette only).

Each run starts a fresh kafkette with its admin server on a free port (``--override
admin.listener=127.0.0.1:0``; the URL is read from the ``kafkette admin on URL`` line it prints),
creates 1000 groups as the memory figure does (one member, session timeout 60 s so the members
stay for the whole run, and one committed offset each), then runs the pipelined heartbeat load of
the load figure (32 connections, each joining a group of its own, so 32 more groups per load, 8 in
flight, counted for 5 s after a 0.3 s ramp) twice, in alternating order from run to run: once
alone and once while a thread GETs ``/metrics`` once a second (start to start) for the whole life
of the load generator, timing each scrape (request sent → whole body read; every body must name
the last of the 1000 groups). Before the loads, three scrapes one after the other without load
give the idle scrape row. Rows: heartbeats/s without and with scrapes, their ratio (issue 21 asks
for ≥ 0.9), and the median scrape durations of the run, under load and idle. Peers have no such
endpoint: n/a.
"""

from __future__ import annotations

import dataclasses
import shutil
import statistics
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from bench.figures.base import Context, Figure, NotApplicable, Row
from bench.figures.load import loadgen
from bench.figures.memory import create_groups
from bench.figures.wire import (
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    OFFSET_COMMIT,
    SYNC_GROUP,
    fresh_topic,
)
from bench.peers import Server, Target, is_kafkette

GROUPS = 1000
IDLE_SCRAPES = 3
SESSION_MS = 60000
LOAD_SECONDS = 5.0
ADMIN_LINE = "kafkette admin on "


def with_admin(target: Target) -> Target:
    """The kafkette target with its admin HTTP server on a free loopback port."""
    def command(port: int, data_dir: str) -> list[str]:
        return [*target.command(port, data_dir), "--override", "admin.listener=127.0.0.1:0"]
    return dataclasses.replace(target, command=command)


def admin_url(server: Server, timeout: float = 10) -> str:
    log = Path(server.data_dir, f"{server.target.name}.out")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(ADMIN_LINE):
                return line[len(ADMIN_LINE):].strip().rstrip("/")
        time.sleep(0.05)
    raise RuntimeError(f"no '{ADMIN_LINE}URL' line from kafkette: {server.log_tail()}")


def scrape_once(url: str, must_contain: str) -> float:
    """Seconds to GET ``url`` and read the whole body, which must mention ``must_contain``."""
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as resp:
        body = resp.read().decode()
    elapsed = time.perf_counter() - t0
    if must_contain not in body:
        raise RuntimeError(f"/metrics does not mention {must_contain}")
    return elapsed


class Scraper(threading.Thread):
    """GETs ``url`` once a second until stopped; the duration of each scrape in seconds."""

    def __init__(self, url: str, must_contain: str) -> None:
        super().__init__(daemon=True)
        self.url, self.must_contain = url, must_contain
        self.durations: list[float] = []
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            while not self.done.is_set():
                t0 = time.perf_counter()
                self.durations.append(scrape_once(self.url, self.must_contain))
                self.done.wait(max(0.0, 1.0 - (time.perf_counter() - t0)))
        except BaseException as exc:  # noqa: BLE001 - re-raised by the measuring thread
            self.error = exc


class Scrape(Figure):
    def measure(self, ctx: Context) -> dict[str, float]:
        if not is_kafkette(ctx.target):
            raise NotApplicable("kafkette's admin /metrics endpoint; no equivalent to scrape")
        server = with_admin(ctx.target).spawn()
        try:
            self.check(server)
            try:
                url = admin_url(server) + "/metrics"
            except RuntimeError:
                if ctx.target.name == "kafkette":
                    raise
                # an older kafkette (--baseline) that predates the admin server
                raise NotApplicable("no admin server (admin.listener) in this version") from None
            groups = create_groups(server.bootstrap, f"scrape-{uuid.uuid4().hex[:6]}", GROUPS,
                                   SESSION_MS)
            idle = [scrape_once(url, f'"{groups[-1]}"') for _ in range(IDLE_SCRAPES)]
            topic = fresh_topic(server.bootstrap, "hb")

            def plain() -> float:
                return loadgen(server.bootstrap, "heartbeat", topic, seconds=LOAD_SECONDS)[0]

            def scraped() -> tuple[float, list[float]]:
                scraper = Scraper(url, f'"{groups[-1]}"')
                scraper.start()
                try:
                    rate = plain()
                finally:
                    scraper.done.set()
                    scraper.join(60)
                if scraper.error is not None:
                    raise RuntimeError(f"scrape failed: {scraper.error}")
                return rate, scraper.durations

            if ctx.run % 2:
                with_scrapes, durations = scraped()
                without = plain()
            else:
                without = plain()
                with_scrapes, durations = scraped()
            return {"without": without, "with": with_scrapes, "ratio": with_scrapes / without,
                    "scrape": statistics.median(durations), "idle_scrape": statistics.median(idle)}
        finally:
            server.stop()
            shutil.rmtree(server.data_dir, ignore_errors=True)


FIGURES = [Scrape(
    name="scrape", title="Heartbeats/s while /metrics is scraped every second (1000 groups)",
    rows=(Row("without", "heartbeats/s, no scrapes (32 conns × 8 in flight, 1000 groups)", "/s",
              1, higher_is_better=True),
          Row("with", "heartbeats/s, /metrics scraped every second", "/s", 1,
              higher_is_better=True),
          Row("ratio", "heartbeats/s with/without scrapes (same run)", "×",
              higher_is_better=True),
          Row("scrape", "median /metrics scrape (1000 groups, under load)", "ms", 1000),
          Row("idle_scrape", "median /metrics scrape (1000 groups, no load)", "ms", 1000)),
    needs=(FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT),
    fresh=True,
)]
