"""``kafkette configs`` (kafka-configs.sh) for topics, brokers, broker loggers, groups and client
metrics: Kafka 4.x's flags, checks, output and error lines::

    kafkette configs --bootstrap-server H:P [--command-config FILE] --describe [--all] \\
        (--entity-type topics|brokers|broker-loggers|groups|client-metrics [--entity-name N] |
         --entity-type brokers --entity-default | --topic T | --broker N | --broker-defaults |
         --broker-logger N | --group G | --client-metrics NAME)
    kafkette configs --bootstrap-server H:P --alter <entity> \\
        [--add-config 'k=v,k2=[a,b]' | --add-config-file FILE] [--delete-config k,k2]

``--describe`` prints the entity's dynamic configs (``--all``: every config) with their synonyms,
``--alter`` deletes then sets configs with IncrementalAlterConfigs. A broker's resource is its id;
``--entity-default`` (``--broker-defaults``) is the cluster-wide dynamic default. Quotas of users,
clients and ips and SCRAM credentials are client_quota_configs' and configs_command's:
``handles`` says whether a command line is this module's.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..config import read_properties
from .client_security import ClientConfigError, read_command_config
from .config_admin import (
    BROKER,
    BROKER_LOGGER,
    CLIENT_METRICS,
    DELETE,
    GROUP,
    SET,
    TOPIC,
    BrokerRefusal,
    ConfigAdmin,
    ConfigAdminError,
    Entry,
)
from .kafka_clients import ToolParser, UsageError, flag_values, opt

DESCRIPTION = ("This tool helps to manipulate and describe entity config for a topic, client, "
               "user, broker, ip, client-metrics or group")
# Kafka's ConfigType values, broker-loggers first (the order of its refusal).
ENTITY_TYPES = ("broker-loggers", "topics", "clients", "users", "brokers", "ips",
                "client-metrics", "groups")
QUOTA_TYPES = frozenset({"users", "clients", "ips"})
RESOURCE_TYPES = {"topics": TOPIC, "brokers": BROKER, "broker-loggers": BROKER_LOGGER,
                  "groups": GROUP, "client-metrics": CLIENT_METRICS}
# Entity flags (--topic T is --entity-type topics --entity-name T) and default flags, in the
# order Kafka's ConfigCommandOptions lists them.
ENTITY_FLAGS = (("topic", "topics"), ("client", "clients"), ("user", "users"),
                ("broker", "brokers"), ("broker-logger", "broker-loggers"), ("ip", "ips"),
                ("client-metrics", "client-metrics"), ("group", "groups"))
DEFAULT_FLAGS = (("client-defaults", "clients"), ("user-defaults", "users"),
                 ("broker-defaults", "brokers"), ("ip-defaults", "ips"))
# ConfigEntry.ConfigSource of Kafka's Admin client, by DescribeConfigs source code.
SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "DYNAMIC_CLIENT_METRICS_CONFIG",
                8: "DYNAMIC_GROUP_CONFIG"}
DYNAMIC_SOURCE = {"topics": 1, "brokers": 2, "client-metrics": 7, "groups": 8}
DEFAULT_BROKER_SOURCE = 3
_SPLIT_ITEMS = re.compile(r",(?=[^\]]*(?:\[|$))")  # commas outside [...]
_SPLIT_PAIR = re.compile(r"\s*=\s*(?=[^\]]*(?:\[|$))")
_CONFIG_KEY = re.compile(r"[$a-zA-Z0-9._-]*")
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class ToolFailure(Exception):
    """Kafka's IllegalArgumentException / InvalidConfigurationException: the message alone on
    stderr, exit 1."""


class CommandFailure(Exception):
    """Any other exception of Kafka's tool: "Error while executing config command with args
    '...'" and the exception (Kafka prints its stack trace), exit 1."""

    def __init__(self, trace: str) -> None:
        super().__init__(trace)
        self.trace = trace


def build_parser() -> ToolParser:
    p = ToolParser(prog="kafkette configs", description=DESCRIPTION, add_help=False,
                   epilog=__doc__.split("\n\n")[1])
    p.add_argument("--help", action="store_true")
    p.add_argument("--version", action="store_true")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]")
    p.add_argument("--bootstrap-controller", metavar="HOST:PORT[,...]")
    p.add_argument("--command-config", metavar="FILE",
                   help="client properties (security.protocol, sasl.*, ssl.*)")
    p.add_argument("--alter", action="store_true", help="Alter the configuration for the entity.")
    p.add_argument("--describe", action="store_true", help="List configs for the given entity.")
    p.add_argument("--all", action="store_true",
                   help="List all configs for the given entity, including static configs.")
    p.add_argument("--entity-type", action="append", default=[], dest="entity_types", metavar="TYPE",
                   help="Type of entity (topics/clients/users/brokers/broker-loggers/ips/"
                        "client-metrics/groups)")
    p.add_argument("--entity-name", action="append", default=[], dest="entity_names",
                   metavar="NAME", help="Name of entity (topic name/client id/user principal name/broker id/ip/"
                        "client metrics/group id)")
    p.add_argument("--entity-default", action="append_const", const="", dest="entity_names",
                   help="Default entity name for clients/users/brokers/ips")
    p.add_argument("--add-config", metavar="K=V,...", help="Key Value pairs of configs to add. Square brackets can "
                   "be used to group values which contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'.")
    p.add_argument("--add-config-file", metavar="FILE", help="Path to a properties file with configs to add.")
    p.add_argument("--delete-config", action="append", default=[], metavar="K,...",
                   help="config keys to remove 'k1,k2'")
    for flag, kind in ENTITY_FLAGS:
        p.add_argument(f"--{flag}", metavar="NAME",
                       help=f"--entity-type {kind} --entity-name NAME")
    for flag, kind in DEFAULT_FLAGS:
        p.add_argument(f"--{flag}", action="store_true", help=f"--entity-type {kind} "
                                                              "--entity-default")
    return p


def handles(argv: Sequence[str]) -> bool:
    """Whether a ``kafkette configs`` command line is this module's: its entity types are not
    all quota entities (users, clients, ips), or it names none (Kafka's refusal, --help)."""
    types = set(flag_values(argv, "--entity-type"))
    types |= {kind for flag, kind in ENTITY_FLAGS + DEFAULT_FLAGS if f"--{flag}" in argv
              or any(token.startswith(f"--{flag}=") for token in argv)}
    return not types or not types <= QUOTA_TYPES


# Options -------------------------------------------------------------------------------------

def entity_types(args: Any) -> list[str]:
    flags = [kind for flag, kind in ENTITY_FLAGS + DEFAULT_FLAGS
             if getattr(args, flag.replace("-", "_")) not in (None, False)]
    return list(args.entity_types) + flags


def entity_names(args: Any) -> list[str]:
    """Kafka's entityNames: --entity-name / --entity-default ("") in order, then the entity
    flags' values, then "" for each default flag."""
    named = [getattr(args, flag.replace("-", "_")) for flag, _ in ENTITY_FLAGS]
    defaults = ["" for flag, _ in DEFAULT_FLAGS if getattr(args, flag.replace("-", "_"))]
    return list(args.entity_names) + [n for n in named if n is not None] + defaults


def check_args(args: Any) -> None:
    """Kafka's ConfigCommandOptions.checkArgs (for every entity type, so a refusal reads the
    same whichever module would have served the command)."""
    if args.alter == args.describe:
        raise UsageError("Command must include exactly one action: --describe, --alter")
    if args.describe:
        for other in ("add_config", "delete_config"):
            if getattr(args, other):
                raise UsageError(f'Option "{opt("describe")}" can\'t be used with option '
                                 f'"{opt(other.replace("_", "-"))}"')
    types = entity_types(args)
    duplicates = sorted({t for t in types if types.count(t) > 1}, key=types.index)
    if duplicates:
        raise ToolFailure(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    if args.bootstrap_server is None and args.bootstrap_controller is None:
        raise ToolFailure("Either --bootstrap-server or --bootstrap-controller must be specified.")
    for kind in types:
        if kind not in ENTITY_TYPES:
            raise ToolFailure(f"Invalid entity type {kind}, the entity type must be one of "
                              f"{', '.join(ENTITY_TYPES)} with a --bootstrap-server or "
                              "--bootstrap-controller argument")
    if not types:
        raise ToolFailure("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {"users", "clients"}:
        raise ToolFailure("Only 'users' and 'clients' entity types may be specified together")
    flagged = any(getattr(args, flag.replace("-", "_")) not in (None, False)
                  for flag, _ in ENTITY_FLAGS + DEFAULT_FLAGS)
    if (args.entity_names or args.entity_types) and flagged:
        raise ToolFailure("--entity-{type,name,default} should not be used in conjunction with "
                          "specific entity flags")
    names = entity_names(args)
    has_name, has_default = any(names), "" in names
    if args.bootstrap_server is not None and args.bootstrap_controller is not None:
        raise ToolFailure("Only one of --bootstrap-server or --bootstrap-controller can be "
                          "specified")
    if has_name and {"brokers", "broker-loggers"} & set(types):
        for broker in [n for n in args.entity_names if n] + [
                v for v in (args.broker, args.broker_logger) if v is not None]:
            if not broker.lstrip("-").isdigit():
                raise ToolFailure(f"The entity name for {types[0]} must be a valid integer "
                                  f"broker id, but it is: {broker}")
    if args.describe:
        if not set(types) & {"users", "clients", "brokers", "ips"} and "" in args.entity_names:
            raise ToolFailure(f"--entity-default must not be specified with --describe of "
                              f"{','.join(types)}")
        if "broker-loggers" in types and not has_name:
            raise ToolFailure(f"An entity name must be specified with --describe of "
                              f"{','.join(types)}")
    if args.alter:
        if set(types) & {"users", "clients", "brokers", "ips"}:
            if not has_name and not has_default:
                raise ToolFailure("An entity-name or default entity must be specified with "
                                  "--alter of users, clients, brokers or ips")
        elif not has_name:
            raise ToolFailure(f"An entity name must be specified with --alter of "
                              f"{','.join(types)}")
        if args.add_config is not None and args.add_config_file is not None:
            raise ToolFailure("Only one of --add-config or --add-config-file must be specified")
        if args.add_config is None and args.add_config_file is None and not args.delete_config:
            raise ToolFailure("At least one of --add-config, --add-config-file, or "
                              "--delete-config must be specified with --alter")


def configs_to_add(args: Any) -> dict[str, str]:
    """Kafka's parseConfigsToBeAdded: the --add-config-file's properties, then --add-config's
    ``k=v`` items (square brackets group a value with commas, and are dropped)."""
    out: dict[str, str] = {}
    if args.add_config_file is not None:
        try:
            out.update(read_properties(Path(args.add_config_file)))
        except OSError as exc:
            raise CommandFailure(f"java.nio.file.NoSuchFileException: {args.add_config_file}"
                                 if isinstance(exc, FileNotFoundError)
                                 else f"java.io.IOException: {exc}") from None
    if args.add_config is not None:
        items = _SPLIT_ITEMS.split(args.add_config)
        while len(items) > 1 and items[-1] == "":  # Java's split drops trailing empty strings
            items.pop()
        pairs = [_SPLIT_PAIR.split(item) for item in items]
        if any(len(pair) != 2 for pair in pairs):
            raise ToolFailure('Invalid entity config: all configs to be added must be in the '
                              'format "key=val" or  "key=[val1,val2]" to group values which '
                              'contain commas.')
        for key, value in pairs:
            out[key.strip()] = re.sub(r"\[?\]?", "", value).strip()
    for key in out:
        if not _CONFIG_KEY.fullmatch(key):
            raise ToolFailure(f"Invalid character found for config key: {key}")
    return out


def configs_to_delete(args: Any) -> list[str]:
    return [key.strip() for value in args.delete_config for key in value.split(",")]


def validate_topic(name: str) -> None:
    """Kafka's Topic.validate (an InvalidTopicException)."""
    if not name:
        problem = "Topic name is illegal, it can't be empty"
    elif name in (".", ".."):
        problem = 'Topic name cannot be "." or ".."'
    elif len(name) > 249:
        problem = (f"Topic name is illegal, it can't be longer than 249 characters, topic name: "
                   f"{name}")
    elif not _TOPIC_NAME.fullmatch(name):
        problem = (f'Topic name "{name}" is illegal, it contains a character other than ASCII '
                   "alphanumerics, '.', '_' and '-'")
    else:
        return
    raise CommandFailure(f"org.apache.kafka.common.errors.InvalidTopicException: {problem}")


# Broker errors as Kafka's Admin client raises them ------------------------------------------

_EXCEPTIONS = {3: "UnknownTopicOrPartitionException", 7: "TimeoutException",
               17: "InvalidTopicException",
               29: "TopicAuthorizationException", 30: "GroupAuthorizationException",
               31: "ClusterAuthorizationException", 35: "UnsupportedVersionException",
               40: "InvalidConfigurationException", 42: "InvalidRequestException",
               44: "PolicyViolationException", 69: "GroupIdNotFoundException",
               91: "ResourceNotFoundException", -1: "UnknownServerException"}
_DEFAULT_MESSAGES = {3: "This server does not host this topic-partition.",
                     29: "Topic authorization failed.", 30: "Group authorization failed.",
                     31: "Cluster authorization failed.", 40: "Configuration is invalid.",
                     42: "This most likely occurs because of a request being malformed by the "
                         "client library or the message was sent to an incompatible broker. See "
                         "the broker logs for more details.",
                     69: "The group id does not exist."}


def refusal_trace(refusal: BrokerRefusal) -> str:
    """The exception a failed admin call's future throws, as Kafka's tool prints it."""
    from kio.schema.errors import ErrorCode

    try:
        name = ErrorCode(refusal.code).name
    except ValueError:
        name = f"error {refusal.code}"
    exception = _EXCEPTIONS.get(refusal.code) or (
        "".join(part.capitalize() for part in name.split("_")) + "Exception")
    message = refusal.message or _DEFAULT_MESSAGES.get(refusal.code, name.upper())
    return (f"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
            f"{exception}: {message}")


# Commands ------------------------------------------------------------------------------------

def _dynamic_source(kind: str, name: str) -> int | None:
    if kind == "brokers" and name == "":
        return DEFAULT_BROKER_SOURCE
    return DYNAMIC_SOURCE.get(kind)  # broker loggers: every entry


def resource_config(admin: ConfigAdmin, kind: str, name: str, synonyms: bool,
                    describe_all: bool) -> list[Entry]:
    """Kafka's getResourceConfig: the entity's configs, only its dynamic ones unless
    ``describe_all``, sorted by name."""
    if kind == "topics" and name:
        validate_topic(name)
    entries = admin.describe(RESOURCE_TYPES[kind], name, synonyms)
    source = None if describe_all else _dynamic_source(kind, name)
    return [e for e in entries if source is None or e.source == source]


def _exists(admin: ConfigAdmin, kind: str, name: str) -> bool:
    if kind == "topics":
        validate_topic(name)
        return name in admin.topics()
    if kind in ("brokers", "broker-loggers"):
        return name == "" or name in {str(n) for n in admin.node_ids()}
    if kind == "client-metrics":
        return name in (admin.config_resources(CLIENT_METRICS) or ())
    in_groups = name in admin.groups()
    listed = admin.config_resources(GROUP)
    return in_groups or (listed is None or name in listed)


def _entities(admin: ConfigAdmin, kind: str) -> list[str]:
    if kind == "topics":
        return admin.topics()
    if kind in ("brokers", "broker-loggers"):
        return [str(n) for n in admin.node_ids()] + [""]
    if kind == "client-metrics":
        return admin.config_resources(CLIENT_METRICS) or []
    return sorted(set(admin.groups()) | set(admin.config_resources(GROUP) or ()))


def _show(value: str | None) -> str:
    return "null" if value is None else value  # Java's string concatenation of null


def describe(admin: ConfigAdmin, kind: str, name: str | None, describe_all: bool,
             out: TextIO) -> None:
    """Kafka's describeResourceConfig."""
    singular = kind[:-1]
    if name is not None and not describe_all and not _exists(admin, kind, name):
        print(f"The {singular} '{name}' doesn't exist and doesn't have dynamic config.", file=out)
        return
    for entity in [name] if name is not None else _entities(admin, kind):
        if entity == "":
            print(f"Default configs for {kind} in the cluster are:", file=out)
        else:
            print(f"{'All' if describe_all else 'Dynamic'} configs for {singular} {entity} are:",
                  file=out)
        for entry in resource_config(admin, kind, entity, True, describe_all):
            synonyms = ", ".join(f"{SOURCE_NAMES.get(s.source, 'UNKNOWN')}:{s.name}="
                                 f"{_show(s.value)}" for s in entry.synonyms)
            print(f"  {entry.name}={_show(entry.value)} sensitive="
                  f"{'true' if entry.sensitive else 'false'} synonyms={{{synonyms}}}", file=out)


def alter(admin: ConfigAdmin, kind: str, name: str, added: dict[str, str], deleted: list[str],
          out: TextIO) -> None:
    """Kafka's alterConfig for a config resource: a name to delete must be set (for broker
    loggers: every name must be a logger), then the deletions and settings in one
    IncrementalAlterConfigs."""
    if kind == "broker-loggers":
        loggers = {e.name for e in resource_config(admin, kind, name, True, False)}
        invalid = [k for k in deleted if k not in loggers] + [k for k in added
                                                               if k not in loggers]
        if invalid:
            raise ToolFailure(f"Invalid broker logger(s): {','.join(invalid)}")
    else:
        current = {e.name for e in resource_config(admin, kind, name, False, False)}
        invalid = [k for k in deleted if k not in current]
        if invalid:
            raise ToolFailure(f"Invalid config(s): {','.join(invalid)}")
    admin.alter(RESOURCE_TYPES[kind], name, [(k, DELETE, "") for k in deleted]
                + [(k, SET, v) for k, v in added.items()])
    if name:
        print(f"Completed updating config for {kind[:-1]} {name}.", file=out)
    else:
        print(f"Completed updating default config for {kind} in the cluster.", file=out)


def run(args: Any, out: TextIO) -> None:
    types, names = entity_types(args), entity_names(args)
    if args.alter and len(types) != len(names):
        raise ToolFailure("An entity name must be specified for every entity type")
    kind = types[0]
    if kind not in RESOURCE_TYPES:  # a quota entity with another type: refused by check_args
        raise ToolFailure(f"Invalid entity type: {kind}")
    added = configs_to_add(args) if args.alter else {}
    try:
        security = read_command_config(args.command_config) or None
    except ClientConfigError as exc:
        raise ToolFailure(str(exc)) from None
    bootstrap = args.bootstrap_server or args.bootstrap_controller
    with ConfigAdmin(bootstrap, security) as admin:
        if args.alter:
            alter(admin, kind, names[0], added, configs_to_delete(args), out)
        else:
            describe(admin, kind, names[0] if names else None, args.all, out)


def main(argv: Sequence[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        if not argv:
            raise UsageError(DESCRIPTION)
        args = parser.parse_tool_args(argv, out)
        if args is None:
            return 0
        check_args(args)
        run(args, out)
    except UsageError as exc:
        print(exc, file=err)
        parser.print_usage(err)
        return 1
    except ToolFailure as exc:
        print(exc, file=err)
        return 1
    except (CommandFailure, BrokerRefusal, ConfigAdminError, OSError) as exc:
        if isinstance(exc, CommandFailure):
            trace = exc.trace
        elif isinstance(exc, BrokerRefusal):
            trace = refusal_trace(exc)
        else:
            trace = f"org.apache.kafka.common.KafkaException: {exc}"
        print(f"Error while executing config command with args '{' '.join(argv)}'", file=err)
        print(trace, file=err)
        return 1
    return 0
