"""``kafkette acls``: kafka-acls.sh's flags, refusals and output, over the ACL APIs.

    kafkette acls --bootstrap-server H:P --add --allow-principal User:alice --operation Read
        --topic orders [--resource-pattern-type literal|prefixed]
    kafkette acls --bootstrap-server H:P --add --allow-principal User:alice --consumer
        --topic orders --group billing
    kafkette acls --bootstrap-server H:P --add --allow-principal User:alice --producer
        --topic orders [--transactional-id T] [--idempotent]
    kafkette acls --bootstrap-server H:P --list [--topic T | --group G | --cluster ...]
        [--resource-pattern-type any|match|literal|prefixed] [--principal User:alice]
    kafkette acls --bootstrap-server H:P --remove [--force] --topic orders
        [--allow-principal User:alice --operation Read]

Resources: --topic, --group, --cluster, --transactional-id, --delegation-token,
--user-principal (each repeatable). Principals: --allow-principal / --deny-principal, hosts:
--allow-host / --deny-host (default '*'); --operation (default All, repeatable).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, TextIO

from ..security.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from .admin_client import AclFilterRow, AdminClient, AdminError
from .client_security import ClientConfigError, read_command_config

# (resource type, name or None for any, pattern type): a ResourcePatternFilter
Resource = tuple[ResourceType, str | None, PatternType]
# (principal, host, operation, permission): an AccessControlEntry
Entry = tuple[str, str, AclOperation, PermissionType]

_CLUSTER: Resource = (ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
_BY_NAME = {op.name.replace("_", "").lower(): op for op in AclOperation
            if op not in (AclOperation.UNKNOWN, AclOperation.ANY)}


class UsageError(Exception):
    """A refused command line (Kafka's printUsageAndExit); the message is Kafka's."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kafkette acls", description=__doc__.split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]")
    p.add_argument("--command-config", metavar="FILE",
                   help="client properties for a TLS/SASL listener (security.protocol, "
                        "sasl.mechanism, sasl.jaas.config, ssl.truststore.location)")
    for action in ("add", "remove", "list"):
        p.add_argument(f"--{action}", action="store_true")
    for option in ("topic", "group", "transactional-id", "delegation-token", "user-principal",
                   "allow-principal", "deny-principal", "allow-host", "deny-host", "operation"):
        p.add_argument(f"--{option}", action="append", default=[])
    p.add_argument("--principal", action="append", default=[],
                   help="with --list: only the ACLs of this principal (repeatable)")
    p.add_argument("--cluster", action="store_true")
    p.add_argument("--resource-pattern-type", default="literal",
                   metavar="literal|prefixed|any|match")
    for flag in ("producer", "consumer", "idempotent", "force"):
        p.add_argument(f"--{flag}", action="store_true")
    return p


def _invalid_with(args: argparse.Namespace, used: str, others: Sequence[str]) -> None:
    """CommandLineUtils.checkInvalidArgs."""
    if not _given(args, used):
        return
    for other in others:
        if _given(args, other):
            raise UsageError(f'Option "[{used}]" can\'t be used with option "[{other}]"')


def _given(args: argparse.Namespace, option: str) -> bool:
    return bool(getattr(args, option.replace("-", "_")))


def check_args(args: argparse.Namespace) -> str:
    """AclCommandOptions.checkArgs: the action, or UsageError with Kafka's message."""
    if not args.bootstrap_server:
        raise UsageError("One of --bootstrap-server or --bootstrap-controller must be specified")
    actions = [a for a in ("add", "remove", "list") if getattr(args, a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    _invalid_with(args, "list", ("producer", "consumer", "allow-host", "allow-principal",
                                 "deny-host", "deny-principal"))
    for role in ("producer", "consumer"):
        _invalid_with(args, role, ("operation", "deny-principal", "deny-host"))
    if args.principal and not args.list:
        raise UsageError("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        raise UsageError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if args.consumer and (not args.topic or not args.group or (
            not args.producer and (args.cluster or args.transactional_id))):
        raise UsageError("With --consumer you must specify a --topic and a --group and no "
                         "--cluster or --transactional-id option should be specified.")
    try:
        args.pattern = PatternType[args.resource_pattern_type.strip().upper()]
    except KeyError:
        raise UsageError(f"Unknown resource pattern type {args.resource_pattern_type}") from None
    if args.pattern == PatternType.UNKNOWN:
        raise UsageError("Unknown resource pattern type UNKNOWN")
    return actions[0]


def operation(name: str) -> AclOperation:
    """SecurityUtils.operation: Read, read, READ, IdempotentWrite, IDEMPOTENT_WRITE..."""
    found = _BY_NAME.get(name.strip().replace("_", "").replace("-", "").lower())
    if found is None:
        raise UsageError(f"Unknown operation name {name.strip()}")
    return found


def _principal(text: str) -> str:
    """SecurityUtils.parseKafkaPrincipal."""
    principal_type, sep, name = text.strip().partition(":")
    if not sep or not principal_type or not name:
        raise UsageError("expected a string in format principalType:principalName but got "
                         f"{text.strip()}")
    return f"{principal_type}:{name}"


def resources(args: argparse.Namespace, required: bool) -> list[Resource]:
    """AclCommand.getResourceFilter."""
    pattern = args.pattern
    out: list[Resource] = [(ResourceType.TOPIC, t.strip(), pattern) for t in args.topic]
    if pattern == PatternType.LITERAL and (args.cluster or args.idempotent):
        out.append(_CLUSTER)
    out += [(ResourceType.GROUP, g.strip(), pattern) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t, pattern) for t in args.transactional_id]
    out += [(ResourceType.DELEGATION_TOKEN, t.strip(), pattern) for t in args.delegation_token]
    out += [(ResourceType.USER, u.strip(), pattern) for u in args.user_principal]
    if not out and required:
        raise UsageError("You must provide at least one resource: --topic <topic> or --cluster "
                         "or --group <group> or --delegation-token <Delegation Token ID>")
    return list(dict.fromkeys(out))


def entries(args: argparse.Namespace, operations: set[AclOperation]) -> set[Entry]:
    """AclCommand.getAcl: every principal x operation x host, allowed and denied."""
    out: set[Entry] = set()
    for principals, hosts, permission in ((args.allow_principal, args.allow_host,
                                           PermissionType.ALLOW),
                                          (args.deny_principal, args.deny_host,
                                           PermissionType.DENY)):
        if not principals:
            continue
        for principal in {_principal(p) for p in principals}:
            for host in {h.strip() for h in hosts} or {"*"}:
                out.update((principal, host, op, permission) for op in operations)
    return out


def resource_acls(args: argparse.Namespace) -> dict[Resource, set[Entry]]:
    """AclCommand.getResourceFilterToAcls, with the --producer / --consumer shortcuts."""
    out: dict[Resource, set[Entry]] = {}
    if not args.producer and not args.consumer:
        ops = {operation(o) for o in args.operation} or {AclOperation.ALL}
        acl_entries = entries(args, ops)
        out.update({resource: set(acl_entries) for resource in resources(args, True)})
    if args.producer:
        found = resources(args, True)
        for resource in found:
            if resource[0] == ResourceType.TOPIC:
                out[resource] = entries(args, {AclOperation.WRITE, AclOperation.DESCRIBE,
                                               AclOperation.CREATE})
            elif resource[0] == ResourceType.TRANSACTIONAL_ID:
                out[resource] = entries(args, {AclOperation.WRITE, AclOperation.DESCRIBE})
        if args.idempotent:
            out[_CLUSTER] = entries(args, {AclOperation.IDEMPOTENT_WRITE})
    if args.consumer:
        for resource in resources(args, True):
            if resource[0] == ResourceType.TOPIC:
                wanted = {AclOperation.READ, AclOperation.DESCRIBE}
            elif resource[0] == ResourceType.GROUP:
                wanted = {AclOperation.READ}
            else:
                continue
            out.setdefault(resource, set()).update(entries(args, wanted))
    for resource, acl_entries in out.items():  # validateOperation
        valid = set(SUPPORTED_OPERATIONS[resource[0]]) | {AclOperation.ALL}
        if any(e[2] not in valid for e in acl_entries):
            names = ", ".join(op.name for op in [AclOperation.ALL,
                                                 *SUPPORTED_OPERATIONS[resource[0]]])
            raise UsageError(f"ResourceType {resource[0].name} only supports operations "
                             f"[{names}]")
    return out


def pattern_text(resource: Resource) -> str:
    """ResourcePattern / ResourcePatternFilter toString."""
    rtype, name, pattern = resource
    return (f"ResourcePattern(resourceType={rtype.name}, name={'<any>' if name is None else name}"
            f", patternType={pattern.name})")


def _binding(resource: Resource, entry: Entry) -> AclBinding:
    rtype, name, pattern = resource
    assert name is not None
    principal, host, op, permission = entry
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def _row(acl: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    return (acl.resource_type, acl.name, acl.pattern_type, acl.principal, acl.host, acl.operation,
            acl.permission)


def _acl(row: Sequence) -> AclBinding:
    return AclBinding(ResourceType(row[0]), row[1], PatternType(row[2]), row[3], row[4],
                      AclOperation(row[5]), PermissionType(row[6]))


def _filter(resource: Resource, entry: Entry | None = None) -> AclFilterRow:
    rtype, name, pattern = resource
    if entry is None:
        return (rtype, name, pattern, None, None, AclOperation.ANY, PermissionType.ANY)
    principal, host, op, permission = entry
    return (rtype, name, pattern, principal, host, op, permission)


def _entry_lines(acls: Sequence[AclBinding]) -> str:
    return "\n".join("\t" + acl.entry_text() for acl in acls)


def add(admin: AdminClient, args: argparse.Namespace, out: TextIO,
        _confirm: Callable[[str], bool]) -> int:
    if args.pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError(f"A '--resource-pattern-type' value of '{args.pattern.name}' is not "
                         "valid when adding acls.")
    wanted = resource_acls(args)
    if any(not acl_entries for acl_entries in wanted.values()):
        raise UsageError("You must specify one of: --allow-principal, --deny-principal when "
                         "trying to add ACLs.")
    for resource, acl_entries in wanted.items():
        existing = {_acl(row) for row in admin.describe_acls(_filter(resource))}
        new = []
        for acl in sorted(_binding(resource, e) for e in acl_entries):
            if acl in existing:
                out.write(f"Acl {acl} already exists.\n")
            else:
                new.append(acl)
        if new:
            out.write(f"Adding ACLs for resource `{pattern_text(resource)}`: \n "
                      f"{_entry_lines(new)}\n\n")
            admin.create_acls([_row(acl) for acl in new])
    return 0


def remove(admin: AdminClient, args: argparse.Namespace, out: TextIO,
           confirm: Callable[[str], bool]) -> int:
    for resource, acl_entries in resource_acls(args).items():
        if not acl_entries:
            question = (f"Are you sure you want to delete all ACLs for resource filter "
                        f"`{pattern_text(resource)}`? (y/n)")
            if args.force or confirm(question):
                admin.delete_acls([_filter(resource)])
            continue
        listed = "\n".join("\t" + _binding(resource, e).entry_text()
                           for e in sorted(acl_entries))
        question = (f"Are you sure you want to remove ACLs: \n {listed}\n from resource filter "
                    f"`{pattern_text(resource)}`? (y/n)")
        if args.force or confirm(question):
            admin.delete_acls([_filter(resource, e) for e in sorted(acl_entries)])
    return 0


def list_acls(admin: AdminClient, args: argparse.Namespace, out: TextIO,
              _confirm: Callable[[str], bool]) -> int:
    found: set[AclBinding] = set()
    for resource in resources(args, False) or [(ResourceType.ANY, None, PatternType.ANY)]:
        found.update(_acl(row) for row in admin.describe_acls(_filter(resource)))
    principals = [_principal(p) for p in args.principal]
    if not principals:
        _print_by_resource(sorted(found), out)
    for principal in principals:
        out.write(f"ACLs for principal `{principal}`\n")
        _print_by_resource(sorted(a for a in found if a.principal == principal), out)
    return 0


def _print_by_resource(acls: list[AclBinding], out: TextIO) -> None:
    by_resource: dict[tuple, list[AclBinding]] = {}
    for acl in acls:
        by_resource.setdefault(acl.pattern, []).append(acl)
    for pattern, group in by_resource.items():
        out.write(f"Current ACLs for resource `{pattern_text(pattern)}`:\n"
                  f"{_entry_lines(group)}\n\n")


COMMANDS = {"add": add, "remove": remove, "list": list_acls}


def _ask(question: str) -> bool:
    print(question, flush=True)
    return sys.stdin.readline().strip().lower() == "y"


def main(argv: Sequence[str], out: TextIO | None = None,
         confirm: Callable[[str], bool] = _ask) -> int:
    if any(a in ("-h", "--help") for a in argv):
        build_parser().print_help()
        return 0
    try:
        args = build_parser().parse_args(list(argv))
        action = check_args(args)
    except UsageError as exc:
        print(f"kafkette acls: {exc}", file=sys.stderr)
        return 1
    try:
        security = read_command_config(args.command_config) or None
        with AdminClient(args.bootstrap_server, client_id="kafkette-acls",
                         security=security) as admin:
            return COMMANDS[action](admin, args, out or sys.stdout, confirm)
    except (UsageError, ClientConfigError) as exc:
        print(f"kafkette acls: {exc}", file=sys.stderr)
        return 1
    except (AdminError, OSError) as exc:
        print(f"Error while executing ACL command: {exc}", file=out or sys.stdout)
        return 1
