"""The admin server's control API for testing clients: fault injection.

    POST   /v1/faults   {"api": "OffsetCommit", "error": "REBALANCE_IN_PROGRESS", "count": 1,
                         "node": 1, "delay_ms": 0, "throttle_ms": 0, "drop": false}
    GET    /v1/faults   the faults not yet used up
    DELETE /v1/faults   remove them all

Bad JSON, unknown fields and unknown API or error names are answered 400 with a one-line reason.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from ..faults import FaultError

FAULT_FIELDS = frozenset({"api", "error", "count", "node", "delay_ms", "throttle_ms", "drop"})


async def json_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object; 400 with the reason when it is not one."""
    raw = await request.text()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise web.HTTPBadRequest(text=f"body is not valid JSON: {exc}") from None
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
