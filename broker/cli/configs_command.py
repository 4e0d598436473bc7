"""``kafkette configs`` (like kafka-configs.sh) for the ``users`` entity: SCRAM credentials.

    kafkette configs --bootstrap-server HOST:PORT [--command-config FILE] --entity-type users \\
        --entity-name alice --alter --add-config 'SCRAM-SHA-512=[iterations=8192,password=s3cret]'
    kafkette configs ... --entity-type users --entity-name alice --alter --delete-config SCRAM-SHA-512
    kafkette configs ... --entity-type users [--entity-name alice] --describe

As Kafka's tool, the password is salted and hashed here (AlterUserScramCredentials carries the
salted password, never the password) and the output lines are Kafka's. Topic, broker and group
configs are entity_configs' (main.configs_tool picks the module of a command line).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn, TextIO

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

from ..security.scram import (
    DEFAULT_ITERATIONS,
    MECHANISM_CODES,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    random_salt,
    salted_password,
)
from .client_security import AuthError, read_command_config
from .wire_client import WireClient

DESCRIBE, ALTER = 50, 51
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.S)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"kafkette configs: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkette configs",
                     description="Describe or alter SCRAM credentials (kafka-configs.sh "
                                 "--entity-type users)")
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--command-config", help="client properties (security.protocol, "
                                                 "sasl.mechanism, sasl.jaas.config, ssl.*)")
    parser.add_argument("--entity-type", required=True)
    parser.add_argument("--entity-name", action="append", default=[])
    parser.add_argument("--describe", action="store_true")
    parser.add_argument("--alter", action="store_true")
    parser.add_argument("--add-config", default="")
    parser.add_argument("--delete-config", default="")
    return parser


def main(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    if args.entity_type not in ("users", "user"):
        print(f"kafkette configs: only --entity-type users (SCRAM credentials) is served, "
              f"not {args.entity_type}", file=sys.stderr)
        return 2
    if args.describe == args.alter:
        print("kafkette configs: give exactly one of --describe and --alter", file=sys.stderr)
        return 2
    try:
        security = read_command_config(args.command_config) or None
        with WireClient(args.bootstrap_server, client_id="kafkette-configs",
                        security=security) as client:
            if args.describe:
                return _describe(client, args.entity_name, out)
            if len(args.entity_name) != 1:
                print("kafkette configs: --alter needs one --entity-name", file=sys.stderr)
                return 2
            return _alter(client, args.entity_name[0], args.add_config, args.delete_config, out)
    except (OSError, AuthError) as exc:
        print(f"kafkette configs: {args.bootstrap_server}: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"kafkette configs: {exc}", file=sys.stderr)
        return 2


def _describe(client: WireClient, users: list[str], out: TextIO) -> int:
    cls = request_type(DESCRIBE, 0)
    user_cls = item_type(cls, "users")
    answer = client.request(DESCRIBE, 0, make(cls, users=tuple(make(user_cls, name=u)
                                                              for u in users) or None))
    for result in answer.results:
        if result.error_code.value == 91:  # RESOURCE_NOT_FOUND: not listed, as Kafka's tool
            continue
        if result.error_code.value:
            print(f"Error retrieving SCRAM credential configs for user-principal "
                  f"'{result.user}': {result.error_message}", file=out)
            continue
        text = ", ".join(f"{MECHANISM_NAMES.get(i.mechanism, 'UNKNOWN')}=iterations={i.iterations}"
                         for i in result.credential_infos)
        print(f"SCRAM credential configs for user-principal '{result.user}' are {text}", file=out)
    return 0


def _split_configs(text: str) -> list[tuple[str, str]]:
    """``K=[v],K2=v2`` -> [(K, v), (K2, v2)] (brackets group values with commas)."""
    out, depth, start = [], 0, 0
    for i, char in enumerate(text + ","):
        depth += (char == "[") - (char == "]")
        if char == "," and depth == 0:
            item = text[start:i].strip()
            start = i + 1
            if item:
                key, _, value = item.partition("=")
                out.append((key.strip(), value.strip().removeprefix("[").removesuffix("]")))
    return out


def _alter(client: WireClient, user: str, add: str, delete: str, out: TextIO) -> int:
    cls = request_type(ALTER, 0)
    up_cls, del_cls = item_type(cls, "upsertions"), item_type(cls, "deletions")
    upsertions: list[Any] = []
    for mechanism, value in _split_configs(add):
        if mechanism not in MECHANISM_CODES:
            raise ValueError(f"Only quota and SCRAM credential configs can be added for 'users'"
                             f" using --bootstrap-server. Unexpected config names: {mechanism}")
        match = _CREDENTIAL.fullmatch(value)
        if match is None:
            raise ValueError(f"Invalid credential property {mechanism}={value}")
        raw = match.group(1)
        iterations = int(raw) if raw not in (None, "", "-1") else DEFAULT_ITERATIONS
        if iterations < MIN_ITERATIONS:
            raise ValueError(f"Iterations {iterations} is less than the minimum "
                             f"{MIN_ITERATIONS} required for {mechanism}")
        salt = random_salt()
        upsertions.append(make(up_cls, name=user, mechanism=MECHANISM_CODES[mechanism],
                               iterations=iterations, salt=salt,
                               salted_password=salted_password(mechanism, match.group(2), salt,
                                                               iterations)))
    deletions = []
    for mechanism in (m.strip() for m in delete.split(",") if m.strip()):
        if mechanism not in MECHANISM_CODES:
            raise ValueError(f"Only quota and SCRAM credential configs can be deleted for "
                             f"'users' using --bootstrap-server. Unexpected config names: "
                             f"{mechanism}")
        deletions.append(make(del_cls, name=user, mechanism=MECHANISM_CODES[mechanism]))
    if not upsertions and not deletions:
        raise ValueError("--alter needs --add-config or --delete-config")
    answer = client.request(ALTER, 0, make(cls, deletions=tuple(deletions),
                                           upsertions=tuple(upsertions)))
    failed = [r for r in answer.results if r.error_code.value]
    if failed:
        for result in failed:
            print(f"Error while executing config command with args: {result.error_message}",
                  file=sys.stderr)
        return 1
    print(f"Completed updating config for user {user}.", file=out)
    return 0
