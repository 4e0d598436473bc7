"""The admin server's control API for testing clients: fault injection and node lifecycle.

    GET    /v1/cluster                 {"cluster_id", "controller", "nodes": [{"id", "host", "port", "state"}]}
    POST   /v1/nodes/{id}/stop         stop a node (its leaders and coordinators move)
    POST   /v1/nodes/{id}/start        start it again (preferred leaders move back)
    POST   /v1/groups/{group}/move     {"node": id}: move the group's coordinator
    POST   /v1/topics/{topic}/partitions/{p}/move   {"node": id}: move the partition's leader

    POST   /v1/faults   {"api": "OffsetCommit", "error": "REBALANCE_IN_PROGRESS", "count": 1,
                         "node": 1, "delay_ms": 0, "throttle_ms": 0, "drop": false}
    GET    /v1/faults   the faults not yet used up
    DELETE /v1/faults   remove them all

Bad JSON (not UTF-8, nested too deeply), unknown fields, out-of-range values and unknown API or
error names are answered 400 with a one-line reason as JSON: ``{"error": "..."}``.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from ..cluster.faults import FaultError
from ..cluster.node_control import ClusterError

FAULT_FIELDS = frozenset({"api", "error", "count", "node", "delay_ms", "throttle_ms", "drop"})


async def json_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object; 400 with the reason when it is not one."""
    raw = await request.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise web.HTTPBadRequest(text=f"body is not UTF-8: {exc.reason} at byte {exc.start}"
                                 ) from None
    try:
        body = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise web.HTTPBadRequest(text=f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise web.HTTPBadRequest(text="body is not valid JSON: nested too deeply") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="body must be a JSON object")
    return body


class ControlApi:
    def __init__(self, broker: Any) -> None:
        self.broker = broker

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/v1/faults", self.list_faults),
            web.post("/v1/faults", self.add_fault),
            web.delete("/v1/faults", self.clear_faults),
            web.get("/v1/cluster", self.cluster),
            web.post("/v1/nodes/{node}/stop", self.stop_node),
            web.post("/v1/nodes/{node}/start", self.start_node),
            web.post("/v1/groups/{group}/move", self.move_group),
            web.post("/v1/topics/{topic}/partitions/{partition}/move", self.move_partition),
        ]

    async def list_faults(self, request: web.Request) -> web.Response:
        return web.json_response({"faults": self.broker.faults.list()})

    async def add_fault(self, request: web.Request) -> web.Response:
        body = await json_body(request)
        unknown = sorted(set(body) - FAULT_FIELDS)
        if unknown:
            raise web.HTTPBadRequest(text=f"unknown field(s) {', '.join(unknown)}; expected "
                                          f"{', '.join(sorted(FAULT_FIELDS))}")
        if "api" not in body:
            raise web.HTTPBadRequest(text="field 'api' is required (e.g. \"OffsetCommit\")")
        options = {k: body[k] for k in ("count", "node", "delay_ms", "throttle_ms", "drop")
                   if k in body}
        try:
            fault = self.broker.faults.add(body["api"], body.get("error"), **options)
        except FaultError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        return web.json_response(fault.to_json(), status=201)

    async def clear_faults(self, request: web.Request) -> web.Response:
        return web.json_response({"cleared": self.broker.faults.clear()})

    # Nodes ------------------------------------------------------------------------------------
    async def cluster(self, request: web.Request) -> web.Response:
        return web.json_response(self.broker.control.describe())

    async def stop_node(self, request: web.Request) -> web.Response:
        node = _node_id(request.match_info["node"])
        await _control(self.broker.control.stop_node(node))
        return web.json_response(self.broker.control.describe())

    async def start_node(self, request: web.Request) -> web.Response:
        node = _node_id(request.match_info["node"])
        await _control(self.broker.control.start_node(node))
        return web.json_response(self.broker.control.describe())

    async def move_group(self, request: web.Request) -> web.Response:
        group = request.match_info["group"]
        node = _node_id((await json_body(request)).get("node"))
        partition = await _control(self.broker.control.move_coordinator(group, node))
        return web.json_response({"group": group, "node": node, "offsets_partition": partition})

    async def move_partition(self, request: web.Request) -> web.Response:
        topic, raw = request.match_info["topic"], request.match_info["partition"]
        if not raw.isdigit():
            raise web.HTTPBadRequest(text=f"partition must be an integer, got {raw!r}")
        node = _node_id((await json_body(request)).get("node"))
        try:
            await self.broker.control.move_leader(topic, int(raw), node)
        except ClusterError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        return web.json_response({"topic": topic, "partition": int(raw), "node": node})


def _node_id(raw: object) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.isdigit():
        return int(raw)
    raise web.HTTPBadRequest(text=f"node must be a node id, got {raw!r}")


async def _control(operation: Any) -> Any:
    try:
        return await operation
    except ClusterError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
