"""The admin HTTP server (aiohttp) on the broker's event loop: routes and lifecycle.

    GET /metrics                                       Prometheus text
    GET /  /groups/{id}  /topics/{name}  /config       the console (HTML)
    GET /groups/{id}/live                              the group page's live part (HTML)
    GET /v1/broker  /v1/topics  /v1/groups  /v1/groups/{id}
    GET /v1/groups/{id}/events?after=SEQ
    GET /v1/topics/{name}/partitions/{p}/records?limit=N
    GET|POST|DELETE /v1/faults                         fault injection (control.py)
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from . import pages, views
from .control import ControlApi
from .guard import HostCheck, guard
from .metrics import Renderer, scrape

log = logging.getLogger("kafkette.admin")

STATIC = Path(__file__).parent / "static"
DEFAULT_RECORDS = 20


def _int(request: web.Request, name: str, default: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be an integer, got {raw!r}") from None


def _partition(request: web.Request) -> int:
    raw = request.match_info.get("partition", "")
    if not raw.isdigit():
        raise web.HTTPBadRequest(text=f"partition must be an integer, got {raw!r}")
    return int(raw)


@web.middleware
def _read_committed(request: web.Request) -> bool:
    """``isolation=read_committed`` (Kafka's consumer setting name), default read_uncommitted."""
    raw = request.query.get("isolation", "read_uncommitted")
    if raw not in ("read_committed", "read_uncommitted"):
        raise web.HTTPBadRequest(text=f"isolation must be read_committed or read_uncommitted, "
                                      f"got {raw!r}")
    return raw == "read_committed"


def _html(body: str) -> web.Response:
    return web.Response(text=body, content_type="text/html", charset="utf-8")


class AdminServer:
    def __init__(self, broker: Any, host: str, port: int) -> None:
        self.broker = broker
        self.host, self.port = host, port
        self._runner: web.AppRunner | None = None
        self._renderer = Renderer()
        self.bound: tuple[str, int] | None = None
        self.started_ms = int(time.time() * 1000)  # with the broker: the timeline starts here

    @property
    def url(self) -> str:
        assert self.bound is not None, "admin server not started"
        host, port = self.bound
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1"
        return f"http://{host}:{port}"

    def app(self) -> web.Application:
        token = self.broker.config.get("admin.auth.token", "")
        app = web.Application(middlewares=[guard(HostCheck(self.host), token)])
        app.add_routes([
            web.get("/metrics", self.metrics),
            web.get("/", self.index_page),
            web.get("/config", self.config_page),
            web.get("/clients", self.clients_page),
            web.get("/groups/{group}", self.group_page),
            web.get("/groups/{group}/live", self.group_live),
            web.get("/topics/{topic}", self.topic_page),
            web.get("/v1/broker", self.broker_json),
            web.get("/v1/topics", self.topics_json),
            web.get("/v1/topics/{topic}/partitions/{partition}/records", self.records_json),
            web.get("/v1/groups", self.groups_json),
            web.get("/v1/groups/{group}", self.group_json),
            web.get("/v1/groups/{group}/events", self.events_json),
            web.get("/v1/clients", self.clients_json),
            web.get("/v1/quotas", self.quotas_json),
            web.static("/static", STATIC),
            *ControlApi(self.broker).routes(),
        ])
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()
        addresses = self._runner.addresses  # the bound port, when admin.listener asked for 0
        self.bound = tuple(addresses[0][:2]) if addresses else (self.host, self.port)
        log.info("kafkette admin (metrics, console) on %s", self.url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self._renderer.close()

    # Metrics ----------------------------------------------------------------------------------
    async def metrics(self, request: web.Request) -> web.Response:
        body = await scrape(self.broker, self._renderer)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    # JSON -------------------------------------------------------------------------------------
    async def broker_json(self, request: web.Request) -> web.Response:
        return web.json_response(views.broker_info(self.broker))

    async def topics_json(self, request: web.Request) -> web.Response:
        return web.json_response(views.topics(self.broker))

    async def records_json(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]
        partition = _partition(request)
        found = await views.records(self.broker, topic, partition,
                                    _int(request, "limit", DEFAULT_RECORDS),
                                    _read_committed(request))
        if found is None:
            raise web.HTTPNotFound(text=f"no partition {topic}-{partition}")
        return web.json_response(found)

    async def groups_json(self, request: web.Request) -> web.Response:
        return web.json_response(views.groups(self.broker))

    async def clients_json(self, request: web.Request) -> web.Response:
        """Client instances that asked for a telemetry subscription, and what they pushed."""
        return web.json_response(self.broker.services.telemetry.clients())

    async def quotas_json(self, request: web.Request) -> web.Response:
        """Client quotas set, and each throttled client's measured rate and last throttle."""
        return web.json_response(self.broker.services.quotas.view())

    async def group_json(self, request: web.Request) -> web.Response:
        found = await views.group_detail(self.broker, request.match_info["group"])
        if found is None:
            raise web.HTTPNotFound(text=f"no group {request.match_info['group']!r}")
        return web.json_response(found)

    async def events_json(self, request: web.Request) -> web.Response:
        events = views.events(self.broker, request.match_info["group"], _int(request, "after", 0))
        return web.json_response(events)

    # Pages ------------------------------------------------------------------------------------
    async def index_page(self, request: web.Request) -> web.Response:
        return _html(pages.index(views.broker_info(self.broker), views.groups(self.broker),
                                 views.topics(self.broker)))

    async def clients_page(self, request: web.Request) -> web.Response:
        return _html(pages.clients(self.broker.services.telemetry.clients()))

    async def config_page(self, request: web.Request) -> web.Response:
        return _html(pages.config(views.broker_info(self.broker)))

    async def group_page(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group"]
        return _html(pages.group(group_id, await views.group_detail(self.broker, group_id),
                                 self.started_ms))

    async def group_live(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group"]
        return _html(pages.group_live(group_id, await views.group_detail(self.broker, group_id)))

    async def topic_page(self, request: web.Request) -> web.Response:
        name = request.match_info["topic"]
        topic = next((t for t in views.topics(self.broker) if t["name"] == name), None)
        if topic is None:
            raise web.HTTPNotFound(text=f"no topic {name!r}")
        partition = _int(request, "partition", 0)
        limit = _int(request, "limit", DEFAULT_RECORDS)
        found = await views.records(self.broker, name, partition, limit,
                                    _read_committed(request))
        return _html(pages.topic(topic, partition, limit, found))
