"""Client quota configs (Kafka's ``/config/users``, ``/config/clients``, ``/config/ips``):
DescribeClientQuotas and AlterClientQuotas, checked as Kafka's ClientQuotaControlManager and
ClientQuotasImage check them, and stored durably in ``log.dirs``.

An entity is a set of (entity type, name) pairs: ``user``, ``client-id`` (alone or together) or
``ip`` (alone); a name of None is the entity type's default (``<default>`` on the command line).
Its values are quota keys to doubles: ``producer_byte_rate``, ``consumer_byte_rate``,
``request_percentage``, ``controller_mutation_rate`` for users and client ids, and
``connection_creation_rate`` for ips (stored and described, not enforced).
"""

from __future__ import annotations

import ipaddress
import logging
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode

from .config_file import read_config_file, write_config_file
from .errors import ServiceError

log = logging.getLogger("kafkette.quotas")

CLIENT_QUOTAS_FILE = "kafkette-client-quotas.json"
USER, CLIENT_ID, IP = "user", "client-id", "ip"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# Kafka's QuotaConfig: the keys of user / client-id entities and of ip entities, by type.
LONG, DOUBLE, INT = "LONG", "DOUBLE", "INT"
CLIENT_KEYS = {PRODUCER_BYTE_RATE: LONG, CONSUMER_BYTE_RATE: LONG, REQUEST_PERCENTAGE: DOUBLE,
               CONTROLLER_MUTATION_RATE: DOUBLE}
IP_KEYS = {CONNECTION_CREATION_RATE: INT}
_LIMITS = {INT: (2**31 - 1, "an INT"), LONG: (2**63 - 1, "a LONG")}

# An entity: its (type, name or None) pairs, sorted by type.
Entity = tuple[tuple[str, str | None], ...]


class QuotaOp(NamedTuple):
    key: str
    value: float
    remove: bool


class FilterComponent(NamedTuple):
    entity_type: str
    match_type: int
    match: str | None


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


class ClientQuotaStore:
    """Every entity's quota values, durable in ``log.dirs``. ``on_change`` callbacks run after
    each change (the enforcing ClientQuotas re-reads the limits)."""

    def __init__(self, log_dirs: str | Path) -> None:
        self._path = Path(log_dirs) / CLIENT_QUOTAS_FILE
        self.entities: dict[Entity, dict[str, float]] = {}
        self.on_change: list[Any] = []

    def load(self) -> None:
        data = read_config_file(self._path)
        if data is None:
            return
        for item in data.get("entities", []):
            entity = entity_of((str(t), None if n is None else str(n))
                               for t, n in item["entity"])
            self.entities[entity] = {str(k): float(v) for k, v in item["quotas"].items()}
        self._changed()

    def _changed(self) -> None:
        for callback in self.on_change:
            callback()

    # Describe ------------------------------------------------------------------------------------
    def describe(self, components: Sequence[FilterComponent],
                 strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """Kafka's ClientQuotasImage.describe: the entities matching the filter."""
        exact: dict[str, str | None] = {}
        specified: set[str] = set()
        for component in components:
            kind = component.entity_type
            if not kind:
                raise ServiceError(ErrorCode.invalid_request, "Invalid empty entity type.")
            if kind in exact or kind in specified:
                raise ServiceError(ErrorCode.invalid_request,
                                   f"Entity type {kind} cannot appear more than once in the "
                                   "filter.")
            if kind not in (IP, USER, CLIENT_ID):
                raise ServiceError(ErrorCode.unsupported_version,
                                   f"Unsupported entity type {kind}")
            if component.match_type == MATCH_EXACT:
                if component.match is None:
                    raise ServiceError(ErrorCode.invalid_request,
                                       "Request specified MATCH_TYPE_EXACT, but set match "
                                       "string to null.")
                exact[kind] = component.match
            elif component.match_type == MATCH_DEFAULT:
                if component.match is not None:
                    raise ServiceError(ErrorCode.invalid_request,
                                       "Request specified MATCH_TYPE_DEFAULT, but also "
                                       "specified a match string.")
                exact[kind] = None
            elif component.match_type == MATCH_SPECIFIED:
                if component.match is not None:
                    raise ServiceError(ErrorCode.invalid_request,
                                       "Request specified MATCH_TYPE_SPECIFIED, but also "
                                       "specified a match string.")
                specified.add(kind)
            else:
                raise ServiceError(ErrorCode.unsupported_version,
                                   f"Unknown match type {component.match_type}")
        named = set(exact) | specified
        if IP in named and (USER in named or CLIENT_ID in named):
            raise ServiceError(ErrorCode.invalid_request,
                               "Invalid entity filter component combination. IP filter "
                               "component should not be used with user or clientId filter "
                               "component.")
        out = []
        for entity, quotas in self.entities.items():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(specified):
                continue
            if all(kind in names and names[kind] == name for kind, name in exact.items()) \
                    and all(kind in names for kind in specified):
                out.append((entity, dict(quotas)))
        return out

    # Alter ---------------------------------------------------------------------------------------
    async def alter(self, changes: Sequence[tuple[Sequence[tuple[str, str | None]],
                                                   Sequence[QuotaOp]]],
                    *, validate_only: bool) -> list[ServiceError | None]:
        """Kafka's ClientQuotaControlManager.alterClientQuotas: each entry is checked on its
        own; the valid ones are applied (unless ``validate_only``) and stored at once."""
        results: list[ServiceError | None] = []
        applied = False
        for pairs, ops in changes:
            try:
                entity = _validate_entity(pairs)
                keys = _keys_for(dict(entity))
                for op in ops:
                    if not op.remove:
                        _validate_value(keys, op.key, op.value)
            except ServiceError as refused:
                results.append(refused)
                continue
            results.append(None)
            if validate_only:
                continue
            quotas = dict(self.entities.get(entity, {}))
            for op in ops:
                if op.remove:
                    quotas.pop(op.key, None)
                else:
                    quotas[op.key] = op.value
            if quotas:
                self.entities[entity] = quotas
            else:
                self.entities.pop(entity, None)
            applied = True
            log.info("client quotas of %s: %s", _entity_text(entity), quotas)
        if applied:
            await self._save()
            self._changed()
        return results

    async def _save(self) -> None:
        data = {"version": 1, "entities": [
            {"entity": [list(pair) for pair in entity], "quotas": quotas}
            for entity, quotas in sorted(self.entities.items(), key=lambda item: repr(item[0]))]}
        await write_config_file(self._path, data)


def _entity_text(entity: Entity) -> str:
    return ", ".join(f"{kind}={'<default>' if name is None else name}" for kind, name in entity)


def _validate_entity(pairs: Sequence[tuple[str, str | None]]) -> Entity:
    """Kafka's ClientQuotaControlManager.validateEntity."""
    if not pairs:
        raise ServiceError(ErrorCode.invalid_request, "Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for kind, name in pairs:
        if kind in seen:
            raise ServiceError(ErrorCode.invalid_request,
                               f"Invalid empty client quota entity, duplicate entity entry {kind}")
        if kind not in (USER, CLIENT_ID, IP):
            raise ServiceError(ErrorCode.unsupported_version,
                               f"Unhandled client quota entity type: {kind}")
        if kind == IP and name:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                raise ServiceError(ErrorCode.invalid_request,
                                   f"{name} is not a valid IP or resolvable host.") from None
        seen[kind] = name
        if name is not None and not name:
            raise ServiceError(ErrorCode.invalid_request, f"Empty {kind} not supported")
    return entity_of(seen.items())


def _keys_for(names: dict[str, str | None]) -> dict[str, str]:
    """Kafka's configKeysForEntityType: which quota keys the entity's combination takes."""
    if IP in names:
        if USER in names or CLIENT_ID in names:
            raise ServiceError(ErrorCode.invalid_request,
                               "Invalid quota entity combination, IP entity shouldnot be "
                               "combined with User or ClientId")
        return IP_KEYS
    return CLIENT_KEYS


def _validate_value(keys: dict[str, str], key: str, value: float) -> None:
    """Kafka's ClientQuotaControlManager.validateQuotaKeyValue."""
    kind = keys.get(key)
    if kind is None:
        raise ServiceError(ErrorCode.invalid_request, f"Invalid configuration key {key}")
    if not value > 0.0:
        raise ServiceError(ErrorCode.invalid_request, f"Quota {key} must be greater than 0")
    if kind == DOUBLE:
        return
    limit, name = _LIMITS[kind]
    if value > limit:
        raise ServiceError(ErrorCode.invalid_request,
                           f"Proposed value for {key} is too large for {name}.")
    if value - math.floor(value) > 1e-16:
        raise ServiceError(ErrorCode.invalid_request, f"{key} cannot be a fractional value.")
