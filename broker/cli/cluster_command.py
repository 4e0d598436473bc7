"""``kafkette cluster …``: drive a running kafkette's control API over HTTP (``serve --admin``).

    kafkette cluster faults add OffsetCommit REBALANCE_IN_PROGRESS --count 2 --admin URL
    kafkette cluster faults list --admin URL
    kafkette cluster faults clear --admin URL
    kafkette cluster status --admin URL
    kafkette cluster nodes stop|start ID --admin URL
    kafkette cluster groups move GROUP NODE --admin URL
    kafkette cluster leaders move TOPIC PARTITION NODE --admin URL

``--admin`` defaults to $KAFKETTE_ADMIN. Errors are one line on stderr, exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any, NoReturn
from urllib.parse import quote


class CliError(Exception):
    pass


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kafkette cluster",
                           description="control a kafkette started with --admin (testing clients)")
    common = OneLineParser(add_help=False)
    common.add_argument("--admin", default=os.environ.get("KAFKETTE_ADMIN"), metavar="URL",
                        help="the admin server, e.g. http://127.0.0.1:9644 (default $KAFKETTE_ADMIN)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    faults = sub.add_parser("faults", help="inject, list and clear faults")
    actions = faults.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    add = actions.add_parser("add", parents=[common], help="fault the next requests of an API")
    add.add_argument("api", help="API name or key, e.g. OffsetCommit")
    add.add_argument("error", nargs="?", help="Kafka error name or code, e.g. NOT_COORDINATOR")
    add.add_argument("--count", type=int, default=1, help="requests to fault (-1: until cleared)")
    add.add_argument("--node", type=int, help="only requests to this node id")
    add.add_argument("--delay-ms", type=int, default=0, help="hold each answer this long")
    add.add_argument("--throttle-ms", type=int, default=0, help="throttle_time_ms of the answer")
    add.add_argument("--drop", action="store_true", help="close the connection instead of answering")
    actions.add_parser("list", parents=[common], help="the faults not yet used up")
    actions.add_parser("clear", parents=[common], help="remove every fault")
    sub.add_parser("status", parents=[common], help="the nodes and the controller")
    nodes = sub.add_parser("nodes", help="stop or start a node")
    node_actions = nodes.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    for action in ("stop", "start"):
        one = node_actions.add_parser(action, parents=[common], help=f"{action} a node")
        one.add_argument("node", type=int)
    groups = sub.add_parser("groups", help="move a group's coordinator")
    group_actions = groups.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    move = group_actions.add_parser("move", parents=[common], help="move a group's coordinator")
    move.add_argument("group")
    move.add_argument("node", type=int)
    leaders = sub.add_parser("leaders", help="move a partition's leader")
    leader_actions = leaders.add_subparsers(dest="action", required=True,
                                            parser_class=OneLineParser)
    move = leader_actions.add_parser("move", parents=[common], help="move a partition's leader")
    move.add_argument("topic")
    move.add_argument("partition", type=int)
    move.add_argument("node", type=int)
    return parser


def print_cluster(cluster: dict[str, Any]) -> None:
    print(f"cluster {cluster['cluster_id']}, controller {cluster['controller']}")
    for node in cluster["nodes"]:
        print(f"{node['id']:>4}  {node['host']}:{node['port']}  {node['state']}")


def call(admin: str | None, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    if not admin:
        raise CliError("no admin server: pass --admin URL or set KAFKETTE_ADMIN")
    base = admin.rstrip("/")
    if "://" not in base:
        base = f"http://{base}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise CliError(f"{method} {path}: {exc.code} {_error_reason(exc.read())}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CliError(f"cannot reach the admin server at {base}: {reason}") from None


def _error_reason(body: bytes) -> str:
    """The admin API's ``{"error": reason}``, else the body as text."""
    text = body.decode(errors="replace").strip()
    try:
        found = json.loads(text)
    except ValueError:
        return text
    return str(found["error"]) if isinstance(found, dict) and "error" in found else text


def describe(fault: dict[str, Any]) -> str:
    what = [fault["error"] or ""]
    if fault["delay_ms"]:
        what.append(f"delay {fault['delay_ms']} ms")
    if fault["throttle_ms"]:
        what.append(f"throttle {fault['throttle_ms']} ms")
    if fault["drop"]:
        what.append("drop connection")
    count = "until cleared" if fault["count"] == -1 else f"next {fault['count']}"
    node = "every node" if fault["node"] is None else f"node {fault['node']}"
    return (f"{fault['id']:>4}  {fault['api']:<16} {count:<14} {node:<11} "
            f"{', '.join(w for w in what if w)}")


def run(args: argparse.Namespace) -> None:
    if args.command == "status":
        print_cluster(call(args.admin, "GET", "/v1/cluster"))
    elif args.command == "nodes":
        print_cluster(call(args.admin, "POST", f"/v1/nodes/{args.node}/{args.action}"))
    elif args.command == "groups":
        moved = call(args.admin, "POST", f"/v1/groups/{quote(args.group, safe='')}/move",
                     {"node": args.node})
        print(f"coordinator of {moved['group']} on node {moved['node']}")
    elif args.command == "leaders":
        moved = call(args.admin, "POST", f"/v1/topics/{quote(args.topic, safe='')}/partitions/"
                     f"{args.partition}/move", {"node": args.node})
        print(f"leader of {moved['topic']}-{moved['partition']} on node {moved['node']}")
    elif args.action == "add":
        body = {"api": args.api, "error": args.error, "count": args.count, "node": args.node,
                "delay_ms": args.delay_ms, "throttle_ms": args.throttle_ms, "drop": args.drop}
        print(describe(call(args.admin, "POST", "/v1/faults", body)))
    elif args.action == "list":
        for fault in call(args.admin, "GET", "/v1/faults")["faults"]:
            print(describe(fault))
    elif args.action == "clear":
        print(f"cleared {call(args.admin, 'DELETE', '/v1/faults')['cleared']} fault(s)")


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        run(args)
    except CliError as exc:
        print(f"kafkette cluster: {exc}", file=sys.stderr)
        return 1
    return 0
