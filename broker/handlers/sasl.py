"""SaslHandshake (17) and SaslAuthenticate (36) once a connection is authenticated, or on a
listener without SASL: Kafka's KafkaApis answers both ILLEGAL_SASL_STATE. The exchange itself,
before authentication, is the SASL listener's gate (broker/security/authenticator.py)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ..context import RequestContext
from ..routes import api


@api(17, 0, 1)
def handle_sasl_handshake(ctx: RequestContext, request: Any) -> Any:
    return ctx.respond(error_code=ErrorCode.illegal_sasl_state, mechanisms=())


@api(36, 0, 2)
def handle_sasl_authenticate(ctx: RequestContext, request: Any) -> Any:
    return ctx.respond(error_code=ErrorCode.illegal_sasl_state,
                       error_message="SaslAuthenticate request received after successful "
                                     "authentication",
                       auth_bytes=b"")
