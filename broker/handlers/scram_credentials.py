"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), v0: the SCRAM users
of the broker (broker/services/scram_credentials.py). Secrets are never returned; the client
salts and hashes the password (the broker derives StoredKey / ServerKey from the salted one)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type

from ..context import RequestContext
from ..routes import api
from ..services.scram_credentials import Deletion, ScramCredentialService, Upsertion


def _service(ctx: RequestContext) -> ScramCredentialService:
    service = ctx.services.scram_credentials
    assert service is not None, "the broker has no SCRAM credential service"
    return service


@api(50, 0, 0)
def handle_describe_user_scram_credentials(ctx: RequestContext, req: Any) -> Any:
    cls = ctx.response_type
    result_cls = item_type(cls, "results")
    info_cls = item_type(result_cls, "credential_infos")
    users = [u.name for u in req.users] if req.users else None
    results = tuple(
        result_cls(user=r.user, error_code=r.error, error_message=r.message,
                   credential_infos=tuple(info_cls(mechanism=m, iterations=i)
                                          for m, i in r.credentials))
        for r in _service(ctx).describe(users))
    return cls(throttle_time=timedelta(0), error_code=ErrorCode.none, error_message=None,
               results=results)


@api(51, 0, 0)
async def handle_alter_user_scram_credentials(ctx: RequestContext, req: Any) -> Any:
    cls = ctx.response_type
    result_cls = item_type(cls, "results")
    results = await _service(ctx).alter(
        [Deletion(d.name, d.mechanism) for d in req.deletions],
        [Upsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password)
         for u in req.upsertions])
    return cls(throttle_time=timedelta(0),
               results=tuple(result_cls(user=r.user, error_code=r.error, error_message=r.message)
                             for r in results))
