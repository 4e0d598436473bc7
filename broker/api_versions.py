"""ApiVersions (key 18): the first request on every connection."""

from __future__ import annotations

import re
from datetime import timedelta
from functools import cache

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import make
from kafkette.protocol.codec import response_type

from .context import RequestContext
from .routes import TABLE, api

API_VERSIONS_KEY = 18
ZERO_THROTTLE = timedelta(0)
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _api_keys(version: int) -> tuple:
    entry = response_type(API_VERSIONS_KEY, version).__dataclass_fields__["api_keys"].type
    item_type = entry.__args__[0]
    return tuple(
        item_type(api_key=key, min_version=lo, max_version=hi)
        for key, (lo, hi, _accepted, _module) in sorted(TABLE.items())
    )


def unsupported_api_versions_response():
    cls = response_type(API_VERSIONS_KEY, 0)
    return cls(error_code=ErrorCode.unsupported_version, api_keys=_api_keys(0))


@cache
def _response(version: int, error: ErrorCode):
    # The route table is static data, so each version's answer never changes.
    return make(
        response_type(API_VERSIONS_KEY, version),
        error_code=error,
        api_keys=_api_keys(version),
        throttle_time=ZERO_THROTTLE,
        supported_features=(),
        finalized_features_epoch=-1,
        finalized_features=(),
        zk_migration_ready=False,
    )


@api(API_VERSIONS_KEY, 0, 4)
def handle_api_versions(ctx: RequestContext, req):
    error = ErrorCode.none
    if ctx.api_version >= 3 and not (
        _SOFTWARE.fullmatch(req.client_software_name or "")
        and _SOFTWARE.fullmatch(req.client_software_version or "")
    ):
        error = ErrorCode.invalid_request
    return _response(ctx.api_version, error)
