"""DescribeCluster (key 60), versions 0-2: the cluster id, the controller and the brokers.

As Kafka's broker answers (AuthHelper.computeDescribeClusterResponse): only the broker endpoint
type is served, an unknown or controller endpoint type is refused (INVALID_REQUEST at v0, else
UNSUPPORTED_ENDPOINT_TYPE / MISMATCHED_ENDPOINT_TYPE); v2 lists stopped (fenced) nodes when
asked. The brokers and controller are the ones Metadata reports.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from .metadata import AUTH_OPS_OMITTED, CLUSTER_AUTHORIZED_OPERATIONS

BROKERS, CONTROLLERS = 1, 2
_ENDPOINT_NAMES = {BROKERS: "BROKER", CONTROLLERS: "CONTROLLER"}


@api(60, 0, 2)
def handle_describe_cluster(ctx: RequestContext, req: Any) -> Any:
    cls = ctx.response_type
    endpoint_type = int(getattr(req, "endpoint_type", BROKERS))
    refusal = _endpoint_refusal(ctx.api_version, endpoint_type)
    if refusal is not None:
        code, message = refusal
        return make(cls, throttle_time=timedelta(0), error_code=code, error_message=message,
                    endpoint_type=BROKERS, cluster_id="", controller_id=-1, brokers=(),
                    cluster_authorized_operations=AUTH_OPS_OMITTED)
    cluster = ctx.cluster
    broker_cls = item_type(cls, "brokers")
    if getattr(req, "include_fenced_brokers", False):
        listed = cluster.registered_brokers()
    else:
        listed = [(n, host, port, False) for n, host, port in cluster.brokers()]
    brokers = tuple(make(broker_cls, broker_id=n, host=host, port=port, rack=None,
                         is_fenced=fenced) for n, host, port, fenced in listed)
    controller = cluster.controller()
    if controller not in {n for n, *_ in listed}:
        controller = -1  # Kafka: a controller id not among the brokers listed is -1
    return make(cls, throttle_time=timedelta(0), error_code=ErrorCode.none, error_message=None,
                endpoint_type=BROKERS, cluster_id=cluster.cluster_id, controller_id=controller,
                brokers=brokers,
                cluster_authorized_operations=_cluster_operations(ctx)
                if req.include_cluster_authorized_operations else AUTH_OPS_OMITTED)


def _cluster_operations(ctx: RequestContext) -> int:
    """What the principal may do on the cluster; 0 without DESCRIBE on it (Kafka's
    AuthHelper.computeDescribeClusterResponse: the request itself is never refused)."""
    if not ctx.authorizing:
        return CLUSTER_AUTHORIZED_OPERATIONS
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)


def _endpoint_refusal(version: int, endpoint_type: int) -> tuple[ErrorCode, str] | None:
    if endpoint_type not in _ENDPOINT_NAMES:
        return (ErrorCode.invalid_request if version == 0 else ErrorCode.unsupported_endpoint_type,
                f"Unsupported endpoint type {endpoint_type}")
    if endpoint_type != BROKERS:
        return (ErrorCode.invalid_request if version == 0 else ErrorCode.mismatched_endpoint_type,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint "
                f"of type {_ENDPOINT_NAMES[endpoint_type]}")
    return None
