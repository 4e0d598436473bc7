from __future__ import annotations

import pytest

from .env import Env


@pytest.fixture(scope="module")
def env():
    e = Env()
    yield e
    e.close()


@pytest.fixture
def make_env():
    made: list[Env] = []

    def factory(**overrides):
        e = Env(**overrides)
        made.append(e)
        return e
    yield factory
    for e in made:
        e.close()
