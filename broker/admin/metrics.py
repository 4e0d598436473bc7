"""``/metrics``: a snapshot taken on the event loop, formatted in a worker process.

The snapshot copies plain numbers (request counters, log offsets, each group's committed
offsets) and yields to the loop every ``_GROUPS_PER_TURN`` groups, so a scrape with thousands
of groups never holds the loop for long. Turning it into Prometheus text (``exposition``) costs
tens of microseconds per series in ``prometheus_client``; that runs in one worker process,
started on the first scrape, so it takes neither the loop's time nor its GIL (a plain
subprocess speaking over pipes, not multiprocessing, which would re-import the embedding
program's main module). If that process cannot run, a thread formats instead.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import sys
from functools import cache
from typing import Any

from kafkette.protocol.codec import request_type

from . import groups_view, shares_view
from .exposition import LENGTH, Snapshot, render

log = logging.getLogger("kafkette.admin")

_GROUPS_PER_TURN = 200


@cache
def api_name(key: int, version: int) -> str:
    try:
        return request_type(key, version).__name__.removesuffix("Request")
    except Exception:  # noqa: BLE001 - a key kio does not know still gets a label
        return f"api{key}"


async def take_snapshot(broker: Any) -> Snapshot:
    stats = broker.stats
    snap = Snapshot(
        apis=[(api_name(s.api_key, s.version), s.api_key, s.version, s.requests, s.errors,
               s.latency_sum, list(s.buckets)) for s in stats.apis.values()],
        connections=len(broker.connections),
        bytes_in=dict(stats.bytes_in), bytes_out=dict(stats.bytes_out),
    )
    nodes = broker.cluster_nodes  # several nodes (--nodes N); None for one
    snap.brokers = [(n["id"], n["host"], n["port"]) for n in broker.control.describe()["nodes"]
                    if n["state"] == "running"]
    node_id = broker.config.node_id
    for info in broker.logs.topics():
        for p in range(info.partitions):
            plog = broker.logs.get_partition(info.name, p)
            if plog is not None:
                snap.partitions.append((info.name, p, plog.log_start_offset, plog.log_end_offset))
                if nodes is None:
                    snap.placement[(info.name, p)] = (node_id, 1, 1, True)
                else:
                    leader, replicas = nodes.leader(info.name, p), nodes.replicas(info.name, p)
                    snap.placement[(info.name, p)] = (leader, len(replicas),
                                                      len(nodes.isr(info.name, p)),
                                                      leader == replicas[0])
    groups = groups_view.list_groups(broker)
    present = {g.group_id for g in groups}  # a deleted group's series end with it
    for log_ in groups_view.event_logs(broker):
        for group_id, r in log_.rebalances.items():
            if group_id in present:
                snap.rebalances[group_id] = (r.count, r.total_ms, r.last_ms)
        snap.commits.update((g, n) for g, n in log_.commits.items() if g in present)
        if log_.load_seconds is not None:
            snap.load_seconds = max(snap.load_seconds or 0.0, log_.load_seconds)
    for client in broker.services.telemetry.clients():
        for m in client["metrics"]:
            attributes = ",".join(f"{k}={v}" for k, v in sorted(m["attributes"].items()))
            snap.client_metrics.append((client["client_id"], client["client_instance_id"],
                                        m["name"], attributes, m["value"]))
    for i, g in enumerate(groups):
        if i and i % _GROUPS_PER_TURN == 0:
            await asyncio.sleep(0)
        snap.groups.append((g.group_id, g.state, g.protocol_type, g.members, g.generation,
                            groups_view.committed_offsets(broker, g.group_id)))
        if g.group_type == "share":
            for sp in await shares_view.share_partitions(broker, g.group_id):
                counts = None if not sp.loaded else (
                    sp.available or 0, sp.acquired or 0, sp.acknowledged or 0, sp.archived or 0)
                snap.share_partitions.append((g.group_id, sp.topic, sp.partition,
                                              sp.start_offset, sp.lag, counts))
    return snap


class Renderer:
    """Formats snapshots in one worker process (``exposition``'s stdio loop), started on the
    first scrape; in a thread of the broker instead if that process cannot run."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._failed = False  # the worker could not run: format in a thread from now on

    async def _worker(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "kafkette.broker.admin.exposition",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        return self._proc

    async def render(self, snap: Snapshot) -> bytes:
        if self._failed:
            return await asyncio.to_thread(render, snap)
        data = pickle.dumps(snap, protocol=pickle.HIGHEST_PROTOCOL)
        async with self._lock:
            try:
                proc = await self._worker()
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(LENGTH.pack(len(data)) + data)
                await proc.stdin.drain()
                size = LENGTH.unpack(await proc.stdout.readexactly(LENGTH.size))[0]
                return await proc.stdout.readexactly(size)
            except (OSError, asyncio.IncompleteReadError) as exc:
                log.warning("metrics worker process failed (%r); formatting in a thread", exc)
                self._failed = True
                await self.close()
        return await asyncio.to_thread(render, snap)

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        if proc.stdin is not None:
            proc.stdin.close()  # the worker exits at end of input
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def scrape(broker: Any, renderer: Renderer) -> bytes:
    """The Prometheus text of ``broker`` now: snapshot on the loop, formatting elsewhere."""
    return await renderer.render(await take_snapshot(broker))
