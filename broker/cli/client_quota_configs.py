"""``kafkette configs`` (kafka-configs.sh) for client quotas of users, client ids and ips
(DescribeClientQuotas / AlterClientQuotas), with Kafka's flags and output::

    kafkette configs --bootstrap-server HOST:PORT --alter --entity-type clients \\
        --entity-name my-app --add-config 'producer_byte_rate=1048576'
    kafkette configs --bootstrap-server HOST:PORT --describe --entity-type users --entity-default
    kafkette configs --bootstrap-server HOST:PORT --alter --user alice --client my-app \\
        --delete-config producer_byte_rate

confluent-kafka's AdminClient has no client quota calls, so this speaks the two APIs with the
project's wire client; it asks the first bootstrap server that answers (any broker serves them).
SCRAM credentials of users are configs_command's: ``handles`` says which of the two a command
line is for, and ``--describe --entity-type users`` prints both, as kafka-configs.sh does.
"""

from __future__ import annotations

import argparse
import decimal
import math
import sys
from typing import NoReturn, TextIO

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

from . import configs_command
from .admin_client import AdminClient, AdminError
from .kafka_clients import flag_values

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
QUOTA_ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
_DESCRIBED_AS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
QUOTA_KEYS = frozenset({"producer_byte_rate", "consumer_byte_rate", "request_percentage",
                        "controller_mutation_rate", "connection_creation_rate"})


def handles(argv: list[str]) -> bool:
    """Whether a ``kafkette configs`` command line is about client quotas (this module) rather
    than SCRAM credentials only (configs_command)."""
    if any(flag in argv for flag in ("--user", "--client", "--ip")):
        return True
    types = set(flag_values(argv, "--entity-type"))
    if types & {"clients", "ips"}:
        return True
    if "users" not in types or "--command-config" in argv:
        return False
    if "--describe" in argv:
        return True
    keys = {item.split("=", 1)[0].strip()
            for text in flag_values(argv, "--add-config") + flag_values(argv, "--delete-config")
            for item in text.split(",")}
    return bool(keys & QUOTA_KEYS)


class CommandError(Exception):
    """A command line kafka-configs.sh refuses (printed, exit 1)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CommandError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkette configs", description="Add, remove or list client quotas "
                     "(kafka-configs.sh).")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true", help="alter the entity's configs")
    action.add_argument("--describe", action="store_true", help="list the entity's configs")
    parser.add_argument("--entity-type", action="append", default=[],
                        choices=sorted(QUOTA_ENTITY_TYPES))
    parser.add_argument("--entity-name", action="append", default=[])
    parser.add_argument("--entity-default", action="append_const", const=None, dest="defaults",
                        default=[], help="the default entity of --entity-type")
    parser.add_argument("--user", metavar="NAME", help="--entity-type users --entity-name NAME")
    parser.add_argument("--client", metavar="ID", help="--entity-type clients --entity-name ID")
    parser.add_argument("--ip", metavar="IP", help="--entity-type ips --entity-name IP")
    parser.add_argument("--add-config", metavar="K=V,K=V", default="",
                        help="quotas to set, e.g. 'producer_byte_rate=1048576,"
                             "consumer_byte_rate=2097152'")
    parser.add_argument("--delete-config", metavar="K,K", default="",
                        help="quotas to remove, e.g. 'producer_byte_rate'")
    return parser


def _entities(args: argparse.Namespace, argv: list[str]) -> list[tuple[str, str | None, bool]]:
    """(entity type, name, named) in command-line order: an --entity-name or --entity-default
    follows its --entity-type, as in kafka-configs.sh; ``named`` False: the type only."""
    out: list[tuple[str, str | None, bool]] = []
    for flag, kind in (("--user", "users"), ("--client", "clients"), ("--ip", "ips")):
        value = getattr(args, flag[2:])
        if value is not None:
            out.append((kind, None if value == "<default>" else value, True))
    pending: list[str] = []
    names: list[tuple[str | None, bool]] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        flag, _, inline = token.partition("=")
        if flag == "--entity-type":
            pending.append(inline or argv[i + 1])
        elif flag == "--entity-name":
            value = inline or argv[i + 1]
            names.append((None if value == "<default>" else value, True))
        elif token == "--entity-default":
            names.append((None, True))
        i += 1
    if len(names) > len(pending):
        raise CommandError("an --entity-name or --entity-default needs an --entity-type")
    for index, kind in enumerate(pending):
        name, named = names[index] if index < len(names) else (None, False)
        out.append((kind, name, named))
    if not out:
        raise CommandError("Missing required argument: --entity-type (or --user / --client)")
    kinds = [QUOTA_ENTITY_TYPES[kind] for kind, _, _ in out]
    if len(set(kinds)) != len(kinds):
        raise CommandError("an entity type can be given once")
    return out


def _parse_add(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise CommandError(f"Invalid entity config: all configs to be added must be in the "
                               f"format \"key=val\": {item}")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            raise CommandError(f"Invalid value {value} for quota {key.strip()}: not a number") \
                from None
    return out


def run(argv: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = build_parser().parse_args(argv)
        entities = _entities(args, argv)
        with AdminClient(args.bootstrap_server, client_id="kafkette-configs") as admin:
            if args.describe:
                if [kind for kind, _, _ in entities] == ["users"]:
                    return _describe_users(admin, entities, argv, out)
                return _describe(admin, entities, out)
            return _alter(admin, entities, _parse_add(args.add_config),
                          [k.strip() for k in args.delete_config.split(",") if k.strip()], out)
    except (CommandError, AdminError) as exc:
        print(f"Error: {exc}", file=err)
        return 1


def _describe(admin: AdminClient, entities: list[tuple[str, str | None, bool]],
              out: TextIO) -> int:
    cls = request_type(DESCRIBE_CLIENT_QUOTAS, 1)
    component_cls = item_type(cls, "components")
    components = tuple(
        make(component_cls, entity_type=QUOTA_ENTITY_TYPES[kind],
             match_type=(MATCH_SPECIFIED if not named else MATCH_DEFAULT if name is None
                         else MATCH_EXACT),
             match=name if named else None)
        for kind, name, named in entities)
    r = admin.request(DESCRIBE_CLIENT_QUOTAS, 1, components=components, strict=True)
    if r.error_code != ErrorCode.none:
        raise AdminError(r.error_message or ErrorCode(r.error_code).name.upper())
    for entry in r.entries or ():
        names = {e.entity_type: e.entity_name for e in entry.entity}
        described = ", ".join(
            f"the default {_DESCRIBED_AS[kind]}" if names[kind] is None
            else f"{_DESCRIBED_AS[kind]} '{names[kind]}'"
            for kind in ("user", "client-id", "ip") if kind in names)
        values = ", ".join(f"{v.key}={java_double(float(v.value))}" for v in entry.values)
        print(f"Quota configs for {described} are {values}", file=out)
    return 0


def java_double(value: float) -> str:
    """Java's Double.toString, as kafka-configs.sh prints a quota: ``1048576.0``, and from ten
    million on in scientific notation (``1.048576E7``)."""
    if value == 0 or not math.isfinite(value) or 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}.get(text, text)
    sign, digits, exponent = decimal.Decimal(repr(value)).as_tuple()
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + int(exponent) - 1
    return f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}E{power}"


def _describe_users(admin: AdminClient, entities: list[tuple[str, str | None, bool]],
                    argv: list[str], out: TextIO) -> int:
    """Users' quotas, then (for named users or all of them) their SCRAM credentials."""
    _describe(admin, entities, out)
    [(_, name, named)] = entities
    if named and name is None:
        return 0  # the default user has no credentials
    return configs_command.main(argv, out)


def _alter(admin: AdminClient, entities: list[tuple[str, str | None, bool]],
           added: dict[str, float], deleted: list[str], out: TextIO) -> int:
    if not added and not deleted:
        raise CommandError("At least one of --add-config or --delete-config must be specified "
                           "with --alter")
    if any(not named for _, _, named in entities):
        raise CommandError("--entity-name or --entity-default must be specified with --alter")
    cls = request_type(ALTER_CLIENT_QUOTAS, 1)
    entry_cls = item_type(cls, "entries")
    entity_cls, op_cls = item_type(entry_cls, "entity"), item_type(entry_cls, "ops")
    ops = tuple(make(op_cls, key=k, value=v, remove=False) for k, v in added.items()) + tuple(
        make(op_cls, key=k, value=0.0, remove=True) for k in deleted)
    entity = tuple(make(entity_cls, entity_type=QUOTA_ENTITY_TYPES[kind], entity_name=name)
                   for kind, name, _ in entities)
    r = admin.request(ALTER_CLIENT_QUOTAS, 1, entries=(make(entry_cls, entity=entity, ops=ops),),
                      validate_only=False)
    [result] = r.entries
    if result.error_code != ErrorCode.none:
        raise AdminError(result.error_message or ErrorCode(result.error_code).name.upper())
    kind, name, _ = entities[0]
    if name is None:
        print(f"Completed updating default config for {kind} in the cluster.", file=out)
    else:
        print(f"Completed updating config for {kind[:-1]} {name}.", file=out)
    return 0


def main(argv: list[str]) -> int:
    return run(argv)
