"""Broker config from environment variables, for containers (as Kafka's and Bitnami's images).

One convention: ``KAFKETTE_CFG_`` followed by the key in upper case with ``.`` written ``_``;
in the rest of the name ``__`` stands for ``_`` and ``___`` for ``-`` (the rules of Confluent's
images, for keys that hold them). So ``KAFKETTE_CFG_GROUP_INITIAL_REBALANCE_DELAY_MS=0`` is
``group.initial.rebalance.delay.ms=0``. They rank above ``--config`` and below ``--override``,
and are checked like every other key (broker/config.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PREFIX = "KAFKETTE_CFG_"
_UNDERSCORES = re.compile(r"_+")


def variable_key(variable: str) -> str:
    """``GROUP_INITIAL_REBALANCE_DELAY_MS`` (the name after the prefix) -> its config key."""
    def replace(run: re.Match[str]) -> str:
        return {1: ".", 2: "_", 3: "-"}.get(len(run.group()), run.group())

    return _UNDERSCORES.sub(replace, variable.lower())


def key_variable(key: str) -> str:
    """The variable that sets ``key`` (the inverse of :func:`variable_key`)."""
    spelled = {".": "_", "_": "__", "-": "___"}
    return PREFIX + "".join(spelled.get(char, char) for char in key).upper()


def environment_config(environment: Mapping[str, str]) -> dict[str, str]:
    """Every ``KAFKETTE_CFG_*`` variable of ``environment`` as ``{config key: value}``."""
    return {variable_key(name[len(PREFIX):]): value.strip()
            for name, value in sorted(environment.items())
            if name.startswith(PREFIX) and len(name) > len(PREFIX)}
