"""The ACL APIs, versions 1-3 (v0 is gone in Kafka 4.0): DescribeAcls (29) needs DESCRIBE on the
cluster, CreateAcls (30) and DeleteAcls (31) ALTER on it. Without an authorizer each answers
SECURITY_DISABLED, as Kafka's AclApis does."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    AclOperation,
    ResourceType,
    operation,
    pattern_type,
    permission,
    resource_type,
)

ZERO = timedelta(0)
_NOT_CONFIGURED = "No Authorizer is configured."
_CLUSTER_DENIED = "Cluster authorization failed."


def _refusal(ctx: RequestContext, needed: AclOperation) -> tuple[ErrorCode, str] | None:
    """Why the request is refused as a whole (no authorizer; the cluster check), or None."""
    if not ctx.authorizing:
        return ErrorCode.security_disabled, _NOT_CONFIGURED
    if not ctx.authorize(needed, ResourceType.CLUSTER, CLUSTER_NAME):
        return ErrorCode.cluster_authorization_failed, _CLUSTER_DENIED
    return None


def _filter(f: Any) -> AclFilter:
    """A DescribeAcls request's or a DeleteAcls filter's fields (the same names)."""
    return AclFilter(resource_type(f.resource_type_filter), f.resource_name_filter,
                     pattern_type(f.pattern_type_filter), f.principal_filter, f.host_filter,
                     operation(f.operation), permission(f.permission_type))


@api(29, 1, 3)
def handle_describe_acls(ctx: RequestContext, req: Any):
    refused = _refusal(ctx, AclOperation.DESCRIBE)
    if refused is not None:
        if refused[0] == ErrorCode.security_disabled:
            refused = (refused[0], "No Authorizer is configured on the broker")
        return ctx.respond(throttle_time=ZERO, error_code=refused[0], error_message=refused[1],
                           resources=())
    assert ctx.services.acls is not None
    acl_filter = _filter(req)
    problem = acl_filter.unknown_part()
    if problem is not None:
        return ctx.respond(throttle_time=ZERO, error_code=ErrorCode.invalid_request,
                           error_message=problem, resources=())
    resource_cls = item_type(ctx.response_type, "resources")
    acl_cls = item_type(resource_cls, "acls")
    grouped: dict[tuple[int, str, int], list[AclBinding]] = {}
    for acl in ctx.services.acls.describe(acl_filter):
        grouped.setdefault(acl.pattern, []).append(acl)
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode.none, error_message=None,
                       resources=tuple(
        make(resource_cls, resource_type=rtype, resource_name=name, pattern_type=ptype,
             acls=tuple(make(acl_cls, principal=a.principal, host=a.host, operation=a.operation,
                             permission_type=a.permission) for a in acls))
        for (rtype, name, ptype), acls in grouped.items()))


@api(30, 1, 3)
async def handle_create_acls(ctx: RequestContext, req: Any):
    result_cls = item_type(ctx.response_type, "results")
    refused = _refusal(ctx, AclOperation.ALTER)
    if refused is not None:
        return ctx.respond(throttle_time=ZERO, results=tuple(
            make(result_cls, error_code=refused[0], error_message=refused[1])
            for _ in req.creations))
    assert ctx.services.acls is not None
    bindings = [AclBinding(resource_type(c.resource_type), c.resource_name,
                           pattern_type(c.resource_pattern_type), c.principal, c.host,
                           operation(c.operation), permission(c.permission_type))
                for c in req.creations]
    results = await ctx.services.acls.create(bindings)
    return ctx.respond(throttle_time=ZERO, results=tuple(
        make(result_cls, error_code=code, error_message=message) for code, message in results))


@api(31, 1, 3)
async def handle_delete_acls(ctx: RequestContext, req: Any):
    result_cls = item_type(ctx.response_type, "filter_results")
    matching_cls = item_type(result_cls, "matching_acls")
    refused = _refusal(ctx, AclOperation.ALTER)
    if refused is not None:
        return ctx.respond(throttle_time=ZERO, filter_results=tuple(
            make(result_cls, error_code=refused[0], error_message=refused[1], matching_acls=())
            for _ in req.filters))
    assert ctx.services.acls is not None
    results = await ctx.services.acls.delete([_filter(f) for f in req.filters])
    return ctx.respond(throttle_time=ZERO, filter_results=tuple(
        make(result_cls, error_code=code, error_message=message, matching_acls=tuple(
            make(matching_cls, error_code=ErrorCode.none, error_message=None,
                 resource_type=a.resource_type, resource_name=a.name,
                 pattern_type=a.pattern_type, principal=a.principal, host=a.host,
                 operation=a.operation, permission_type=a.permission) for a in deleted))
        for code, message, deleted in results))
