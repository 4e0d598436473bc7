"""The API routing table refuses a second handler for a key (an error at import, not a silent
overwrite)."""

from __future__ import annotations

import types

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

