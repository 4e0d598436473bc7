"""Connection settings of the example clients (aiokafka keyword arguments) from the environment:
$BOOTSTRAP, and for a secured listener $SECURITY_PROTOCOL (PLAINTEXT, SSL, SASL_PLAINTEXT or
SASL_SSL), $SSL_CAFILE (the CA to trust), $SASL_MECHANISM (PLAIN, SCRAM-SHA-256 or
SCRAM-SHA-512), $SASL_USERNAME and $SASL_PASSWORD."""

from __future__ import annotations

import os
from typing import Any

from aiokafka.helpers import create_ssl_context


def connection_settings() -> dict[str, Any]:
    protocol = os.environ.get("SECURITY_PROTOCOL", "PLAINTEXT").upper()
    settings: dict[str, Any] = {"bootstrap_servers": os.environ.get("BOOTSTRAP", "127.0.0.1:9092"),
                                "security_protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        settings["ssl_context"] = create_ssl_context(cafile=os.environ.get("SSL_CAFILE") or None)
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        settings.update(sasl_mechanism=os.environ.get("SASL_MECHANISM", "SCRAM-SHA-512"),
                        sasl_plain_username=os.environ["SASL_USERNAME"],
                        sasl_plain_password=os.environ["SASL_PASSWORD"])
    return settings
