"""``python -m kafkette.broker.cli.healthcheck [HOST:PORT] [--command-config FILE]``: exit 0 when a
broker answers a Kafka ApiVersions and a Metadata request, 1 otherwise (docker-compose's
healthcheck; works against any Kafka). Metadata too: kafkette's listeners answer ApiVersions
before the broker is ready (broker/boot.py), Metadata only once it is. ``--command-config``: client
properties for a TLS and/or SASL listener (security.protocol, sasl.mechanism, sasl.jaas.config,
ssl.truststore.location), so a SASL_SSL listener is checked through a real login."""

from __future__ import annotations

import sys
from collections.abc import Mapping

from .client_security import AuthError
from .wire_client import WireClient, WireError

API_VERSIONS = 18
METADATA = 3


def check(bootstrap: str, timeout: float = 3,
          security: Mapping[str, str] | None = None) -> str | None:
    """None when healthy, else why not."""
    try:
        with WireClient(bootstrap, "kafkette-healthcheck", timeout, security) as client:
            response = client.request(API_VERSIONS, 3, client_software_name="kafkette-healthcheck",
                                      client_software_version="1")
            if response.error_code != 0:
                return f"{bootstrap}: ApiVersions error {response.error_code}"
            if not any(int(k.api_key) == API_VERSIONS for k in response.api_keys):
                return f"{bootstrap}: ApiVersions answer lists no ApiVersions"
            client.request(METADATA, 1, topics=[])  # no topic: the brokers and controller only
    except (OSError, ConnectionError, WireError, ValueError, AuthError) as exc:
        return f"{bootstrap}: {exc}"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    security = None
    if "--command-config" in argv:
        at = argv.index("--command-config")
        if at + 1 >= len(argv):
            print("usage: healthcheck [HOST:PORT] [--command-config FILE]", file=sys.stderr)
            return 2
        from pathlib import Path

        from ..config import read_properties

        try:
            security = read_properties(Path(argv[at + 1]))
        except OSError as exc:
            print(f"unhealthy: {exc}", file=sys.stderr)
            return 1
        del argv[at:at + 2]
    problem = check(argv[0] if argv else "127.0.0.1:9092", security=security)
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
