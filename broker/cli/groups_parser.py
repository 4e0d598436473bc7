"""The command line of ``kafkette groups`` (broker/cli/groups_command.py): kafka-consumer-groups.sh's
flags, each with its help, and the usage of each action."""

from __future__ import annotations

import argparse
from typing import NoReturn

ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")


class UsageError(Exception):
    """A refused command line (Kafka's printUsageAndExit); the message is Kafka's."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


USAGE_EPILOG = """\
usage by action:
  kafkette groups --bootstrap-server H:P --list [--state [S,S]] [--type]
  kafkette groups --bootstrap-server H:P --describe (--group G ... | --all-groups)
      [--members [--verbose] | --state | --offsets]
  kafkette groups --bootstrap-server H:P --delete (--group G ... | --all-groups)
  kafkette groups --bootstrap-server H:P --reset-offsets (--group G ... | --all-groups)
      (--topic T[:P,P] ... | --all-topics) (--to-earliest | --to-latest | --to-current |
      --to-offset N | --shift-by N | --to-datetime ISO | --by-duration PnDTnHnMnS |
      --from-file CSV) [--dry-run | --execute] [--export]
  kafkette groups --bootstrap-server H:P --delete-offsets --group G --topic T[:P,P] ...

Short forms: kafkette groups list | describe G | delete G | reset-offsets G ... |
delete-offsets G --topic T (options go before or after them). describe starts with a summary
(state, assignor, members, total lag), as rpk group describe does. A refused command line is
one line on stderr and exit status 1.
"""

ACTION_HELP = {
    "list": "list all consumer groups",
    "describe": "describe the group(s): members, offsets, lag",
    "delete": "delete the group(s); only groups without members",
    "reset-offsets": "reset the committed offsets of an inactive group (a dry run unless "
                     "--execute)",
    "delete-offsets": "delete the committed offsets of a group's topic partitions",
}


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kafkette groups",
                description="Consumer groups of a running broker, with "
                            "kafka-consumer-groups.sh's flags, refusals and output.",
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=USAGE_EPILOG)
    p.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT[,...]",
                   help="the server(s) to connect to (default 127.0.0.1:9092)")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true", help=ACTION_HELP[action])
    p.add_argument("--group", action="append", default=[], help="the consumer group (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="every group (instead of --group)")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,P]",
                   help="a topic, or some of its partitions (repeatable)")
    p.add_argument("--all-topics", action="store_true",
                   help="every topic the group has offsets for (instead of --topic)")
    p.add_argument("--members", action="store_true", help="describe: the members")
    p.add_argument("--offsets", action="store_true",
                   help="describe: offsets and lag per partition (the default)")
    p.add_argument("--state", nargs="?", const="", default=None, metavar="STATE[,STATE]",
                   help="describe: the group's state; list: the state column, or only groups "
                        "in these states")
    p.add_argument("--type", nargs="?", const="", default=None, metavar="TYPE[,TYPE]",
                   help="list: the type column (classic, consumer), or only groups of these "
                        "types")
    p.add_argument("--verbose", action="store_true",
                   help="describe --members: each member's partitions too")
    p.add_argument("--dry-run", action="store_true",
                   help="reset-offsets: show the new offsets, change nothing (the default)")
    p.add_argument("--execute", action="store_true", help="reset-offsets: commit the new offsets")
    p.add_argument("--to-offset", type=int, metavar="N", help="reset to offset N")
    p.add_argument("--shift-by", type=int, metavar="N",
                   help="reset by N from the current offset (negative: back)")
    p.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                   help="reset to the first offset at or after this time")
    p.add_argument("--by-duration", metavar="PnDTnHnMnS",
                   help="reset to the first offset at or after this long ago")
    p.add_argument("--to-earliest", action="store_true", help="reset to the log start")
    p.add_argument("--to-latest", action="store_true", help="reset to the log end")
    p.add_argument("--to-current", action="store_true", help="reset to the committed offset")
    p.add_argument("--from-file", metavar="CSV",
                   help="reset to the offsets of a CSV: [group,]topic,partition,offset")
    p.add_argument("--export", action="store_true", help="print the new offsets as that CSV")
    p.add_argument("--timeout", type=int, default=5000, metavar="MS",
                   help="how long to wait for the broker (default 5000)")
    p.add_argument("--command-config", metavar="FILE",
                   help="client properties: client.id, and a TLS/SASL login (security.protocol, "
                        "sasl.mechanism, sasl.jaas.config, ssl.truststore.location, ...)")
    return p
