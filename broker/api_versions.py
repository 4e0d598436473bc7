"""ApiVersions (key 18): the first request on every connection. Features: ``transaction.version``
is supported at levels 0-2 and finalized at the broker's ``transaction.version``; below 2 the
KIP-890 versions of the transaction APIs (AddPartitionsToTxn v4+, EndTxn v5+, TxnOffsetCommit
v5+) are not advertised, so clients choose transaction version 2 only when it is finalized."""

from __future__ import annotations

import re
from datetime import timedelta
from functools import cache

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import make
from kafkette.protocol.codec import response_type

from .context import RequestContext
from .registry import ROUTES, api

API_VERSIONS_KEY = 18
ZERO_THROTTLE = timedelta(0)
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


TRANSACTION_VERSION = "transaction.version"
MAX_TRANSACTION_VERSION = 2
# The highest version of each transaction API before transaction version 2 (KIP-890 part 2).
_TV1_MAX = {24: 3, 26: 4, 28: 4}
FEATURES_EPOCH = 1  # the finalized features never change while the broker runs


def _api_keys(version: int, transaction_version: int) -> tuple:
    entry = response_type(API_VERSIONS_KEY, version).__dataclass_fields__["api_keys"].type
    item_type = entry.__args__[0]
    capped = _TV1_MAX if transaction_version < 2 else {}
    return tuple(
        item_type(api_key=r.api_key, min_version=r.min_version,
                  max_version=min(r.max_version, capped.get(r.api_key, r.max_version)))
        for r in sorted(ROUTES.values(), key=lambda r: r.api_key)
    )


def unsupported_api_versions_response():
    cls = response_type(API_VERSIONS_KEY, 0)
    return cls(error_code=ErrorCode.unsupported_version, api_keys=_api_keys(0, 0))


@cache
def _response(version: int, error: ErrorCode, transaction_version: int):
    # Routes are all registered at import time, so each version's answer never changes.
    cls = response_type(API_VERSIONS_KEY, version)
    supported, finalized = (), ()
    if version >= 3:
        fields = cls.__dataclass_fields__
        supported = (fields["supported_features"].type.__args__[0](
            name=TRANSACTION_VERSION, min_version=0, max_version=MAX_TRANSACTION_VERSION),)
        if transaction_version > 0:  # Kafka leaves out features finalized at level 0
            finalized = (fields["finalized_features"].type.__args__[0](
                name=TRANSACTION_VERSION, max_version_level=transaction_version,
                min_version_level=transaction_version),)
    return make(
        cls,
        error_code=error,
        api_keys=_api_keys(version, transaction_version),
        throttle_time=ZERO_THROTTLE,
        supported_features=supported,
        finalized_features_epoch=FEATURES_EPOCH,
        finalized_features=finalized,
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
    return _response(ctx.api_version, error, ctx.config.get_int(TRANSACTION_VERSION))
