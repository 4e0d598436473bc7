"""SCRAM credentials (Kafka's ScramControlManager / ScramImage): per user and mechanism the
salt, StoredKey, ServerKey and iterations, never a password. Managed with
DescribeUserScramCredentials (50) / AlterUserScramCredentials (51), as kafka-configs.sh
--entity-type users does, and kept durably in ``log.dirs`` (a JSON document rewritten on every
change, like the dynamic configs). A change applies to connections that log in afterwards.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode

from kafkette.storage.recovery import write_durably

from ..config import BrokerConfig
from ..security.scram import (
    MAX_ITERATIONS,
    MECHANISM_CODES,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_salted,
    new_credential,
)
from .config_file import read_config_file, write_config_file

CREDENTIALS_FILE = "kafkette-scram-credentials.json"

DESCRIBE_USER_THAT_DOES_NOT_EXIST = "Attempt to describe a user credential that does not exist: "
DESCRIBE_DUPLICATE_USER = ("Cannot describe SCRAM credentials for the same user twice in a "
                           "single request: ")
_TWICE = "A user credential cannot be altered twice in the same request"


class UserResult(NamedTuple):
    user: str
    error: ErrorCode
    message: str | None
    credentials: tuple[tuple[int, int], ...] = ()  # (mechanism code, iterations)


class Deletion(NamedTuple):
    name: str
    mechanism: int


class Upsertion(NamedTuple):
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


class ScramCredentialService:
    def __init__(self, config: BrokerConfig) -> None:
        self._path = Path(config.log_dirs) / CREDENTIALS_FILE
        # mechanism name -> user -> credential (Kafka's ScramImage keeps them by mechanism)
        self._by_mechanism: dict[str, dict[str, ScramCredential]] = {
            name: {} for name in MECHANISM_CODES}

    # Start-up and the authenticator's lookup ---------------------------------------------------
    def load(self) -> None:
        data = read_config_file(self._path) or {}
        for mechanism, users in data.get("credentials", {}).items():
            if mechanism not in self._by_mechanism:
                continue
            for user, c in users.items():
                self._by_mechanism[mechanism][user] = ScramCredential(
                    base64.b64decode(c["salt"]), base64.b64decode(c["stored_key"]),
                    base64.b64decode(c["server_key"]), int(c["iterations"]))

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        users = self._by_mechanism.get(mechanism)
        return users.get(user) if users is not None else None

    async def add_password(self, user: str, mechanism: str, password: str,
                           iterations: int) -> None:
        """Seed a credential from a password (``serve --add-scram``, test fixtures)."""
        self._by_mechanism[mechanism][user] = new_credential(mechanism, password, iterations)
        await self._save()

    def add_password_now(self, user: str, mechanism: str, password: str,
                         iterations: int) -> None:
        """As ``add_password``, written synchronously (at start-up, before serving)."""
        self._by_mechanism[mechanism][user] = new_credential(mechanism, password, iterations)
        write_durably(self._path, json.dumps(self._document(), indent=1, sort_keys=True))

    # DescribeUserScramCredentials ------------------------------------------------------------
    def describe(self, users: Iterable[str] | None) -> list[UserResult]:
        names = list(users or ())
        duplicated: dict[str, bool] = {}
        if not names:
            for by_user in self._by_mechanism.values():
                for user in by_user:
                    duplicated[user] = False
        else:
            for name in names:
                duplicated[name] = name in duplicated
        out = []
        for user, twice in duplicated.items():
            if twice:
                out.append(UserResult(user, ErrorCode.duplicate_resource,
                                      DESCRIBE_DUPLICATE_USER + user))
                continue
            found = tuple((MECHANISM_CODES[mechanism], by_user[user].iterations)
                          for mechanism, by_user in self._by_mechanism.items() if user in by_user)
            if found:
                out.append(UserResult(user, ErrorCode.none, None, found))
            else:
                out.append(UserResult(user, ErrorCode.resource_not_found,
                                      DESCRIBE_USER_THAT_DOES_NOT_EXIST + user))
        return out

    # AlterUserScramCredentials ---------------------------------------------------------------
    async def alter(self, deletions: Iterable[Deletion],
                    upsertions: Iterable[Upsertion]) -> list[UserResult]:
        to_delete: dict[str, Deletion] = {}
        to_upsert: dict[str, Upsertion] = {}
        errors: dict[str, tuple[ErrorCode, str]] = {}
        for deletion in deletions:
            if deletion.name in errors:
                continue
            if to_delete.pop(deletion.name, None) is not None:
                errors[deletion.name] = (ErrorCode.duplicate_resource, _TWICE)
                continue
            problem = self._deletion_problem(deletion)
            if problem is not None:
                errors[deletion.name] = problem
            else:
                to_delete[deletion.name] = deletion
        for upsertion in upsertions:
            if upsertion.name in errors:
                continue
            if (to_delete.pop(upsertion.name, None) is not None
                    or to_upsert.pop(upsertion.name, None) is not None):
                errors[upsertion.name] = (ErrorCode.duplicate_resource, _TWICE)
                continue
            problem = _upsertion_problem(upsertion)
            if problem is not None:
                errors[upsertion.name] = problem
            else:
                to_upsert[upsertion.name] = upsertion
        results = []
        for deletion in to_delete.values():
            del self._by_mechanism[MECHANISM_NAMES[deletion.mechanism]][deletion.name]
            results.append(UserResult(deletion.name, ErrorCode.none, None))
        for up in to_upsert.values():
            mechanism = MECHANISM_NAMES[up.mechanism]
            self._by_mechanism[mechanism][up.name] = credential_from_salted(
                mechanism, up.salted_password, up.salt, up.iterations)
            results.append(UserResult(up.name, ErrorCode.none, None))
        results += [UserResult(user, code, message) for user, (code, message) in errors.items()]
        if to_delete or to_upsert:
            await self._save()
        return results

    def _deletion_problem(self, deletion: Deletion) -> tuple[ErrorCode, str] | None:
        problem = _name_and_mechanism_problem(deletion.name, deletion.mechanism)
        if problem is not None:
            return problem
        if deletion.name not in self._by_mechanism[MECHANISM_NAMES[deletion.mechanism]]:
            return (ErrorCode.resource_not_found,
                    "Attempt to delete a user credential that does not exist")
        return None

    # Storage -----------------------------------------------------------------------------------
    def _document(self) -> dict[str, Any]:
        def encode(c: ScramCredential) -> dict[str, Any]:
            return {"salt": base64.b64encode(c.salt).decode(),
                    "stored_key": base64.b64encode(c.stored_key).decode(),
                    "server_key": base64.b64encode(c.server_key).decode(),
                    "iterations": c.iterations}

        return {"credentials": {mechanism: {user: encode(c) for user, c in users.items()}
                                for mechanism, users in self._by_mechanism.items()}}

    async def _save(self) -> None:
        await write_config_file(self._path, self._document())


def _name_and_mechanism_problem(name: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISM_NAMES:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def _upsertion_problem(upsertion: Upsertion) -> tuple[ErrorCode, str] | None:
    problem = _name_and_mechanism_problem(upsertion.name, upsertion.mechanism)
    if problem is not None:
        return problem
    if upsertion.iterations < MIN_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too few iterations"
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too many iterations"
    return None
