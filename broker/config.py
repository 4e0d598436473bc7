"""The broker's configuration: ``BrokerConfig``, the values from every source (defaults, the
properties file, ``KAFKETTE_CFG_*``, ``--override``, dynamic configs) in Kafka's precedence.

The keys themselves (Kafka's defaults, types and checks) are in ``config_def.py``; each
component reads its own keys; ``validate()`` checks every supplied value at start, with
Kafka's wording.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from .config_def import (
    DEFAULTS,
    NO_EFFECT_KEYS,
    ConfigError,
    Listener,
    config_key,
    parse_listeners,
    parse_value,
)
from .security.config_keys import (
    is_password,
    listener_problem,
)

log = logging.getLogger("kafkette.broker.config")

# The config -----------------------------------------------------------------------------------

# The levels a broker config value comes from (BrokerConfig.layers), most specific first.
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = "dynamic-broker", "dynamic-default", "static", "default"


class BrokerConfig(Mapping[str, str]):
    """Kafka-style string properties with typed getters."""

    def __init__(self, overrides: Mapping[str, object] | None = None) -> None:
        self._supplied = {key: _to_str(value) for key, value in (overrides or {}).items()}
        # Kafka's dynamic layers over the static config (AlterConfigs on a BROKER resource):
        # the cluster-wide default and this broker's own, which wins over the default.
        self._dynamic_default: dict[str, str] = {}
        self._dynamic_broker: dict[str, str] = {}
        self._values = self._merged()

    def _merged(self) -> dict[str, str]:
        given = {**self._supplied, **self._dynamic_default, **self._dynamic_broker}
        values = dict(DEFAULTS)
        values.update(given)
        # Kafka's coarser synonyms apply when the finer key is not set (at any level).
        if "log.retention.ms" not in given:
            for key, factor in (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)):
                if key in given and _is_int(given[key]):
                    values["log.retention.ms"] = str(int(given[key]) * factor)
                    break
        if "log.dirs" not in given and "log.dir" in given:
            values["log.dirs"] = given["log.dir"]
        return values

    def apply_dynamic(self, cluster_default: Mapping[str, str],
                      per_broker: Mapping[str, str]) -> None:
        """Replace the dynamic layers; every getter answers the new effective values."""
        self._dynamic_default = dict(cluster_default)
        self._dynamic_broker = dict(per_broker)
        self._values = self._merged()

    def layers(self, key: str) -> list[tuple[str, str]]:
        """Where ``key`` is set, most specific first: (level, value) with level one of
        DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT (Kafka's synonym order)."""
        out = []
        for level, values in ((DYNAMIC_BROKER, self._dynamic_broker),
                              (DYNAMIC_DEFAULT, self._dynamic_default),
                              (STATIC, self._supplied), (DEFAULT, DEFAULTS)):
            if key in values:
                out.append((level, values[key]))
        return out

    @classmethod
    def from_sources(cls, properties_file: str | Path | None,
                     overrides: Iterable[str] = (), *,
                     environment: Mapping[str, str] | None = None,
                     preset: Mapping[str, str] | None = None) -> BrokerConfig:
        """The config of ``kafkette serve``, lowest priority first: ``preset`` (``--dev``), the
        properties file, ``KAFKETTE_CFG_*`` variables of ``environment``
        (broker/config_env.py), then ``--override key=value`` items."""
        values: dict[str, str] = dict(preset or {})
        if properties_file is not None:
            path = Path(properties_file)
            try:
                values.update(read_properties(path))
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"--config {path}: {getattr(exc, 'strerror', None) or exc}") from exc
        if environment is not None:
            from .config_env import environment_config

            values.update(environment_config(environment))
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"--override expects key=value, got {item!r}")
            key, value = item.split("=", 1)
            values[key.strip()] = value.strip()
        return cls(values)

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def validate(self) -> list[str]:
        """Check every value (raises ConfigError, Kafka's wording); return the unknown keys."""
        for key, raw in self._values.items():
            parse_value(key, raw)
        advertised = self.advertised_listeners
        names = {item.name for item in self.listeners}
        for item in advertised:
            if item.name not in names:
                raise ConfigError(f"Invalid value {self._values['advertised.listeners']} for "
                                  f"configuration advertised.listeners: listener {item.name} "
                                  "is not in listeners")
        for item in self.listeners:
            protocol = self.security_protocols.get(item.name)
            if protocol is None:
                raise ConfigError(f"No security protocol defined for listener {item.name} "
                                  "(listener.security.protocol.map)")
            problem = listener_problem(self._values, item.name, protocol)
            if problem is not None:
                raise ConfigError(problem)
        return sorted(key for key in self._supplied
                      if config_key(key) is None and key not in NO_EFFECT_KEYS
                      and key not in ("log.dir",))

    def warn_unknown(self) -> None:
        for key in self.validate():
            log.warning("The configuration '%s' was supplied but isn't a known config.", key)

    def log_values(self) -> None:
        """Kafka's start-up dump of the effective config, one ``key = value`` a line."""
        lines = "".join(f"\n\t{key} = {'[hidden]' if is_password(key) else self._values[key]}"
                        for key in sorted(self._values))
        log.info("kafkette config values:%s", lines)

    def get_int(self, key: str) -> int:
        try:
            return int(self._values[key])
        except ValueError as exc:
            raise ConfigError(f"{key} must be an integer, got {self._values[key]!r}") from exc

    def get_bool(self, key: str) -> bool:
        value = self._values[key].strip().lower()
        if value not in ("true", "false"):
            raise ConfigError(f"{key} must be true or false, got {self._values[key]!r}")
        return value == "true"

    def get_str(self, key: str) -> str:
        return self._values[key]

    def with_overrides(self, **overrides: object) -> BrokerConfig:
        merged: dict[str, object] = dict(self._supplied)
        merged.update({k.replace("_", "."): v for k, v in overrides.items()})
        return BrokerConfig(merged)

    @property
    def listeners(self) -> list[Listener]:
        return parse_listeners(self._values["listeners"])

    @property
    def broker_listeners(self) -> list[Listener]:
        """The listeners kafkette serves: those not named in ``controller.listener.names`` (a
        Kafka server.properties lists the KRaft controller's; a single kafkette has none)."""
        controllers = {name.strip().upper() for name in
                       self._values.get("controller.listener.names", "").split(",") if name.strip()}
        served = [item for item in self.listeners if item.name not in controllers]
        if not served:
            raise ConfigError("every listener is a controller listener (controller.listener.names)")
        return served

    @property
    def listener(self) -> Listener:
        return self.broker_listeners[0]

    @property
    def advertised_listeners(self) -> list[Listener]:
        value = self._values.get("advertised.listeners", "")
        return parse_listeners(value) if value.strip() else []

    def advertised_for(self, name: str) -> Listener | None:
        """The advertised address of listener ``name`` (None: advertise the bound one)."""
        return next((item for item in self.advertised_listeners if item.name == name), None)

    @property
    def security_protocols(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for item in self._values["listener.security.protocol.map"].split(","):
            name, _, protocol = item.partition(":")
            if name.strip():
                out[name.strip().upper()] = protocol.strip().upper()
        return out

    @property
    def node_id(self) -> int:
        return self.get_int("node.id")

    @property
    def log_dirs(self) -> Path:
        return Path(self._values["log.dirs"].split(",")[0])


def _is_int(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True


def _to_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_properties(path: Path) -> dict[str, str]:
    """Java .properties subset: key=value or key: value, # and ! comments, \\ continuations."""
    values: dict[str, str] = {}
    pending = ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        for sep in ("=", ":"):
            if sep in line:
                key, value = line.split(sep, 1)
                values[key.strip()] = value.strip()
                break
        else:
            values[line] = ""
    return values
