"""The DEBUG request log (one line per request) follows its logger's level on connections that
are already open: a connection reads the level at most once a second, not per request."""

from __future__ import annotations

import logging
import time

from tests.wire import WireClient

API_VERSIONS = 18


def _logged(caplog, client_id: str) -> int:
    return sum(1 for r in caplog.records
               if r.name == "kafkette.requests" and f"client_id={client_id} " in r.getMessage())


def test_a_level_change_reaches_an_open_connection(kafka_broker, caplog):
    caplog.set_level(logging.INFO, logger="kafkette.requests")
    with WireClient(kafka_broker, client_id="level-probe") as client:
        assert client.request(API_VERSIONS, 0).error_code == 0
        assert _logged(caplog, "level-probe") == 0
        caplog.set_level(logging.DEBUG, logger="kafkette.requests")
        time.sleep(1.1)
        assert client.request(API_VERSIONS, 0).error_code == 0
        assert _logged(caplog, "level-probe") == 1
        caplog.set_level(logging.INFO, logger="kafkette.requests")
        time.sleep(1.1)
        assert client.request(API_VERSIONS, 0).error_code == 0
        assert _logged(caplog, "level-probe") == 1
