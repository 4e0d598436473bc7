"""The ACLs of a broker with an authorizer (``authorizer.class.name``): CreateAcls / DeleteAcls
change them as Kafka's AclControlManager does, durably in ``log.dirs`` (a JSON document beside the
topic catalog) before the request is answered, and the authorizer decides with them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from kio.schema.errors import ErrorCode

from ..config import BrokerConfig
from ..config_def import ConfigError, parse_value
from ..services.config_file import read_config_file, write_config_file
from .acl import AclBinding, AclFilter, validation_error
from .authorizer import StandardAuthorizer, parse_super_users

log = logging.getLogger("kafkette.authorizer")

ACL_FILE = "kafkette-acls.json"

CreateResult = tuple[ErrorCode, str | None]
# per filter: (error, message, the ACLs it deleted)
DeleteResult = tuple[ErrorCode, str | None, list[AclBinding]]


def authorizer_configured(config: BrokerConfig) -> bool:
    """Whether ``authorizer.class.name`` names an authorizer (ConfigError for an unknown one)."""
    return parse_value("authorizer.class.name", config.get_str("authorizer.class.name")) != ""


class AclStore:
    """The durable ACL set and the authorizer deciding with it."""

    def __init__(self, config: BrokerConfig) -> None:
        self._path = Path(config.log_dirs) / ACL_FILE
        self.authorizer = StandardAuthorizer(
            parse_super_users(config.get_str("super.users")),
            config.get_bool("allow.everyone.if.no.acl.found"))
        self._lock = asyncio.Lock()  # one change at a time: each is written whole, in order

    def load(self) -> None:
        """Put back the stored ACLs (at start, before the listeners serve requests)."""
        data = read_config_file(self._path)
        if data is None:
            return
        try:
            acls = [AclBinding.from_json(item) for item in data.get("acls", [])]
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{self._path} is corrupt: {exc!r}") from None
        self.authorizer.replace(acls)
        log.info("loaded %d ACLs from %s", len(acls), self._path)

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return self.authorizer.matching(acl_filter)

    async def create(self, acls: Sequence[AclBinding]) -> list[CreateResult]:
        """One result per binding, in order; an ACL that exists already is a success."""
        results: list[CreateResult] = []
        async with self._lock:
            current = set(self.authorizer.acls)
            added = []
            for acl in acls:
                problem = validation_error(acl)
                if problem is not None:
                    results.append((ErrorCode.invalid_request, problem))
                    continue
                if acl not in current:
                    current.add(acl)
                    added.append(acl)
                results.append((ErrorCode.none, None))
            if added:
                await self._commit(current)
                log.info("added ACLs: %s", ", ".join(map(str, added)))
        return results

    async def delete(self, filters: Sequence[AclFilter]) -> list[DeleteResult]:
        """Per filter, the ACLs it matched (an ACL may match several filters), all removed."""
        results: list[DeleteResult] = []
        async with self._lock:
            current = self.authorizer.acls
            removed: set[AclBinding] = set()
            for acl_filter in filters:
                problem = acl_filter.unknown_part()
                if problem is not None:
                    results.append((ErrorCode.invalid_request, problem, []))
                    continue
                matched = [acl for acl in sorted(current) if acl_filter.matches(acl)]
                removed.update(matched)
                results.append((ErrorCode.none, None, matched))
            if removed:
                await self._commit(current - removed)
                log.info("removed ACLs: %s", ", ".join(map(str, sorted(removed))))
        return results

    async def _commit(self, acls: set[AclBinding] | frozenset[AclBinding]) -> None:
        """Write the new set durably, then let the authorizer decide with it."""
        await write_config_file(self._path, {"version": 1, "acls": [
            acl.to_json() for acl in sorted(acls)]})
        self.authorizer.replace(acls)
