"""Fixtures of the compatibility matrix and the results table of the last run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.compat.clients import Client, client_named
from tests.compat.results import ResultsRecorder

_clients: dict[str, Client | str] = {}


@pytest.fixture
def client(request: pytest.FixtureRequest) -> Client:
    """The client named by the test's parameter, installed once per run (or the test skips)."""
    name = request.param
    if name not in _clients:
        candidate = client_named(name)
        reason = candidate.ensure()
        _clients[name] = candidate if reason is None else reason
    got = _clients[name]
    if isinstance(got, str):
        pytest.skip(f"{name} unavailable: {got}")
    return got


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("kafkette-compat-results"):
        target = os.environ.get("KAFKETTE_COMPAT_RESULTS")
        config.pluginmanager.register(ResultsRecorder(Path(target) if target else None),
                                      "kafkette-compat-results")
