"""What ``kafkette topics``, ``console-producer`` and ``console-consumer`` share: their refusals
(Kafka's CommandLineUtils wording), the client configuration they build from the command line
and property files, and confluent-kafka, imported only when a tool runs.

The tools are built on confluent-kafka (librdkafka): it finds partition leaders and group
coordinators, retries, and speaks SASL/TLS, so a tool works against one kafkette node,
``kafkette serve --nodes N`` and a multi-broker Kafka alike.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn, TextIO

from ..config import read_properties

# Java client settings librdkafka does not know (the tools set their own (de)serialization).
_JAVA_ONLY = (".serializer", ".deserializer")


class ToolError(Exception):
    """A failure reported as one line on stderr, exit status 1."""


class UsageError(ToolError):
    """A refused command line (Kafka's printUsageAndExit); the message is Kafka's."""


class ToolParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def parse_tool_args(self, argv: Sequence[str], out: TextIO) -> argparse.Namespace | None:
        """The arguments, or None once ``--help`` or ``--version`` is answered on ``out``, as
        Kafka's tools do before anything else."""
        args = self.parse_args(list(argv))
        if args.help:
            self.print_help(out)
            return None
        if args.version:
            from .version import version

            print(version(), file=out)
            return None
        return args


def opt(name: str) -> str:
    """An option as Kafka's joptsimple prints it in refusals: ``[topic]``."""
    return f"[{name}]"


def require(value: object, name: str) -> None:
    """Kafka's CommandLineUtils.checkRequiredArgs."""
    if value is None or value is False:
        raise UsageError(f'Missing required argument "{opt(name)}"')


def refuse_with(used: str, others: Iterable[str], given: set[str]) -> None:
    """Kafka's CommandLineUtils.checkInvalidArgs: ``used`` may not come with any of ``others``."""
    if used in given:
        for other in others:
            if other in given:
                raise UsageError(f'Option "{opt(used)}" can\'t be used with option "{opt(other)}"')


def flag_values(argv: Sequence[str], flag: str) -> list[str]:
    """The values a raw command line gives ``flag`` (``--flag V`` or ``--flag=V``), before it
    is parsed (to choose the module that parses it)."""
    out = []
    for i, token in enumerate(argv):
        if token == flag and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif token.startswith(flag + "="):
            out.append(token.split("=", 1)[1])
    return out


def key_values(items: Iterable[str], what: str = "properties") -> dict[str, str]:
    """Kafka's parseKeyValueArgs: ``key=value`` items (the value may contain ``=``)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"Invalid command line {what}: {item!r} (expected key=value)")
        out[key] = value
    return out


def properties_file(path: str | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        return read_properties(Path(path))
    except OSError as exc:
        raise ToolError(f"{path}: {exc.strerror or exc}") from None


def client_config(bootstrap: str, *layers: dict[str, str]) -> dict[str, Any]:
    """librdkafka settings: the layers in order (later ones win), then the bootstrap servers.
    Kafka's (Java) names of the login settings are taken as kafka-*.sh take them."""
    from .client_security import librdkafka_settings

    conf: dict[str, Any] = {}
    for layer in layers:
        try:
            translated = librdkafka_settings(layer)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        conf.update({k: v for k, v in translated.items() if not k.endswith(_JAVA_ONLY)})
    conf["bootstrap.servers"] = bootstrap
    conf.setdefault("log_level", "4")  # librdkafka's warnings and errors, not its notices
    return conf


def confluent() -> ModuleType:
    try:
        import confluent_kafka
    except ImportError:
        raise ToolError("this tool needs confluent-kafka: pip install confluent-kafka") from None
    return confluent_kafka
