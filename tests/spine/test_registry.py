"""The API routing table refuses a second handler for a key (an error at import, not a silent
overwrite)."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

import kafkette.broker.server  # noqa: F401  (registers the routes)
from kafkette.broker.registry import ROUTES, DuplicateRouteError


def test_registering_a_key_twice_fails_at_import():
    before = dict(ROUTES)
    module = types.ModuleType("kafkette_test_duplicate_handler")
    source = (
        "from kafkette.broker.registry import api\n"
        "@api(3, 0, 13)\n"
        "def handle_metadata_again(ctx, req):\n"
        "    return None\n"
    )
    with pytest.raises(DuplicateRouteError, match="api key 3 is already handled by "
                                                   "kafkette.broker.handlers.metadata"):
        exec(compile(source, "kafkette_test_duplicate_handler.py", "exec"), module.__dict__)
    assert before == ROUTES



def test_what_a_route_lets_the_connection_do_is_declared_by_the_route():
    """Pipelining, memoised identical repeats and the answer to an unsupported version are
    properties of the route (broker/routes.py), not API keys known to the connection."""
    from kafkette.broker import connection, routes

    assert routes.TABLE.keys() >= routes.PIPELINED
    assert routes.TABLE.keys() >= routes.IDENTICAL_REPEATS
    assert {key for key, route in ROUTES.items() if route.pipelined} == routes.PIPELINED == {8}
    assert {key for key, route in ROUTES.items() if route.identical_repeats} \
        == routes.IDENTICAL_REPEATS == {12, 68}
    assert {key for key, route in ROUTES.items() if route.refuse_version is not None} == {18}
    refusal_codec, refusal = ROUTES[18].refuse_version()
    assert (refusal_codec.api_key, refusal_codec.version, refusal.error_code) == (18, 0, 35)
    # the connection spells no api key: no literal key or key prefix in its source
    source = Path(connection.__file__).read_text()
    assert "api_key !=" not in source and "api_key ==" not in source
    assert re.search(r'b"\\x00\\x[0-9a-f]{2}"', source) is None


def test_windowed_repeats_are_registered_for_routes_only():
    import kafkette.broker.handlers.offsets  # noqa: F401  (registers its repeats)
    from kafkette.broker import routes

    assert set(routes.REPEATS) == {8}
    assert not set(routes.REPEATS) & routes.IDENTICAL_REPEATS
