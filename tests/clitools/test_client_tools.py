"""``kafkette topics``, ``console-producer``, ``console-consumer`` and ``groups`` as a user runs
them: real processes against ``kafkette serve`` and ``kafkette serve --nodes 3`` (also real
processes). A record goes in and out from the shell; a group's offsets are described and reset
on its coordinator, which with three nodes is not the bootstrap node."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.tools import ROOT
from tests.wire import WireClient

TOPIC = "quickstart"
LISTENING = re.compile(r"kafkette listening on ([\w.:-]+):(\d+)")


@dataclass
class Served:
    proc: subprocess.Popen
    addresses: list[str]  # by node, node 1 first

    @property
    def bootstrap(self) -> str:
        return self.addresses[0]


def kafkette(*args: str, stdin: str | None = None, timeout: float = 60
             ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkette.broker", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def wait_ready(bootstrap: str, timeout: float = 30) -> None:
    """ListGroups answers NONE once __consumer_offsets is loaded."""
    deadline = time.monotonic() + timeout
    while True:
        with WireClient(bootstrap) as w:
            if w.request(16, 3).error_code == 0:
                return
        assert time.monotonic() < deadline, "kafkette did not get ready"
        time.sleep(0.05)


@pytest.fixture(params=[1, 3], ids=["one-node", "three-nodes"])
def served(request, tmp_path) -> Iterator[Served]:
    nodes = request.param
    args = [sys.executable, "-m", "kafkette.broker", "serve", "--nodes", str(nodes)]
    for key, value in {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                       "group.initial.rebalance.delay.ms": "0",
                       "offsets.topic.num.partitions": "6"}.items():
        args += ["--override", f"{key}={value}"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    addresses = []
    for _ in range(nodes):
        match = LISTENING.search(proc.stdout.readline())
        assert match, "kafkette serve did not start"
        addresses.append(f"{match.group(1)}:{match.group(2)}")
    try:
        wait_ready(addresses[0])
        yield Served(proc, addresses)
    finally:
        proc.terminate()
        proc.wait(20)


def coordinator_of(bootstrap: str, group: str) -> int:
    with WireClient(bootstrap) as w:
        return w.request(10, 4, key_type=0, coordinator_keys=(group,)).coordinators[0].node_id


def group_not_on_bootstrap(served: Served) -> str:
    """A group id whose coordinator is not node 1 when there are several nodes."""
    for n in range(100):
        group = f"quickstart-group-{n}"
        if len(served.addresses) == 1 or coordinator_of(served.bootstrap, group) != 1:
            return group
    raise AssertionError("every group lands on node 1")


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_a_record_goes_in_and_out_from_the_shell(served: Served) -> None:
    nodes = len(served.addresses)
    bootstrap = served.bootstrap
    created = kafkette("topics", "--bootstrap-server", bootstrap, "--create", "--topic", TOPIC,
                       "--partitions", "3", "--replication-factor", str(nodes))
    assert (created.returncode, created.stdout) == (0, f"Created topic {TOPIC}.\n"), created.stderr
    again = kafkette("topics", "--bootstrap-server", bootstrap, "--create", "--topic", TOPIC)
    assert again.returncode == 1
    assert again.stdout == (f"Error while executing topic command : Topic '{TOPIC}' already "
                            "exists.\n")
    assert kafkette("topics", "--bootstrap-server", bootstrap, "--create", "--topic", TOPIC,
                    "--if-not-exists").returncode == 0
    described = kafkette("topics", "--bootstrap-server", bootstrap, "--describe", "--topic",
                         TOPIC)
    lines = described.stdout.splitlines()
    assert lines[0].startswith(f"Topic: {TOPIC}\tTopicId: ")
    assert f"\tPartitionCount: 3\tReplicationFactor: {nodes}\tConfigs: " in lines[0]
    assert [line.split("\t")[2] for line in lines[1:]] == [f"Partition: {p}" for p in range(3)]
    listed = kafkette("topics", "--bootstrap-server", bootstrap, "--list", "--exclude-internal")
    assert listed.stdout == f"{TOPIC}\n"

    sent = kafkette("console-producer", "--bootstrap-server", bootstrap, "--topic", TOPIC,
                    "--property", "parse.key=true", "--property", "key.separator=:",
                    stdin="k1:hello\nk2:world\nk3:from the shell\nk4:fourth\n")
    assert sent.returncode == 0, sent.stderr

    group = group_not_on_bootstrap(served)
    read = kafkette("console-consumer", "--bootstrap-server", bootstrap, "--topic", TOPIC,
                    "--from-beginning", "--group", group, "--max-messages", "4",
                    "--property", "print.key=true", "--property", "key.separator=|")
    assert read.returncode == 0, read.stderr
    assert sorted(read.stdout.splitlines()) == ["k1|hello", "k2|world", "k3|from the shell",
                                                "k4|fourth"]
    assert "Processed a total of 4 messages" in read.stderr

    # groups --describe and --reset-offsets, on the group's coordinator.
    described = kafkette("groups", "--bootstrap-server", bootstrap, "--describe", "--group", group)
    assert described.returncode == 0, described.stderr
    table = rows(described.stdout)
    coordinator = coordinator_of(bootstrap, group)
    assert table[1] == ["COORDINATOR", served.addresses[coordinator - 1], f"({coordinator})"]
    offsets = [r for r in table if r[:2] == [group, TOPIC]]
    assert len(offsets) == 3 and sum(int(r[3]) for r in offsets) == 4
    assert all(r[3] == r[4] for r in offsets)  # consumed to the end
    reset = kafkette("groups", "--bootstrap-server", bootstrap, "--reset-offsets", "--group",
                     group, "--topic", TOPIC, "--to-earliest", "--execute")
    assert reset.returncode == 0, reset.stderr
    assert rows(reset.stdout) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]] + [
        [group, TOPIC, str(p), "0"] for p in range(3)]
    after = rows(kafkette("groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                          group).stdout)
    assert sorted(r[3] for r in after if r[:2] == [group, TOPIC]) == ["0", "0", "0"]
    # Read again from the reset offsets, until nothing comes for a while.
    again = kafkette("console-consumer", "--bootstrap-server", bootstrap, "--topic", TOPIC,
                     "--group", group, "--timeout-ms", "4000")
    assert sorted(again.stdout.splitlines()) == ["fourth", "from the shell", "hello", "world"]

    listed = kafkette("groups", "--bootstrap-server", bootstrap, "--list", "--type")
    assert [group, "Classic"] in rows(listed.stdout)


def test_groups_list_shows_each_groups_type_and_filters_by_it(served: Served) -> None:
    bootstrap = served.bootstrap
    assert kafkette("topics", "--bootstrap-server", bootstrap, "--create", "--topic",
                    "typed").returncode == 0
    kafkette("console-producer", "--bootstrap-server", bootstrap, "--topic", "typed",
             stdin="one\n")
    for group, protocol in (("typed-classic", "classic"), ("typed-consumer", "consumer")):
        read = kafkette("console-consumer", "--bootstrap-server", bootstrap, "--topic", "typed",
                        "--from-beginning", "--group", group, "--max-messages", "1",
                        "--consumer-property", f"group.protocol={protocol}")
        assert read.stdout == "one\n", read.stderr
    every = rows(kafkette("groups", "--bootstrap-server", bootstrap, "--list", "--type").stdout)
    assert ["typed-classic", "Classic"] in every and ["typed-consumer", "Consumer"] in every
    consumer = rows(kafkette("groups", "--bootstrap-server", bootstrap, "--list", "--type",
                             "consumer").stdout)
    assert consumer == [["GROUP", "TYPE"], ["typed-consumer", "Consumer"]]
    bad = kafkette("groups", "--bootstrap-server", bootstrap, "--list", "--type", "nope")
    assert bad.returncode == 1
    assert "Invalid types list 'nope'. Valid types are: Consumer, Classic, Share" in bad.stderr


def test_topics_reports_and_json_follow_the_cluster(kafka_cluster) -> None:
    import json

    bootstrap = kafka_cluster.bootstrap.split(",")[0]
    assert kafkette("topics", "--bootstrap-server", bootstrap, "--create", "--topic", "rep",
                    "--partitions", "2", "--replication-factor", "3", "--config",
                    "retention.ms=5000").returncode == 0
    described = json.loads(kafkette("topics", "--bootstrap-server", bootstrap, "--describe",
                                    "--topic", "rep", "--json").stdout)
    assert [(t["topic"], t["partition_count"], t["replication_factor"], t["configs"])
            for t in described] == [("rep", 2, 3, {"retention.ms": "5000"})]
    assert [sorted(p["isr"]) for p in described[0]["partitions"]] == [[1, 2, 3], [1, 2, 3]]
    under = kafkette("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", "rep",
                     "--under-replicated-partitions")
    assert (under.returncode, under.stdout) == (0, "")
    assert kafkette("topics", "--bootstrap-server", bootstrap, "--create", "--topic", "placed",
                    "--replica-assignment", "1:2,2:3").returncode == 0
    placed = json.loads(kafkette("topics", "--bootstrap-server", bootstrap, "--describe",
                                 "--topic", "placed", "--json").stdout)[0]["partitions"]
    assert [p["replicas"] for p in placed] == [[1, 2], [2, 3]]
    kafka_cluster.stop_node(3)
    under = kafkette("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", "rep",
                     "--under-replicated-partitions")
    lines = under.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("\tTopic: rep\tPartition: ") for line in lines)
    assert all("\tReplicas: " in line and "3" not in line.split("\tIsr: ")[1].split("\t")[0]
               for line in lines)
    assert kafkette("topics", "--bootstrap-server", bootstrap, "--alter", "--topic", "rep",
                    "--partitions", "4").returncode == 0
    assert json.loads(kafkette("topics", "--bootstrap-server", bootstrap, "--describe",
                               "--topic", "re.", "--json").stdout)[0]["partition_count"] == 4
    assert kafkette("topics", "--bootstrap-server", bootstrap, "--delete", "--topic",
                    "rep").returncode == 0
    gone = kafkette("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", "rep")
    assert gone.stdout == ("Error while executing topic command : Topic 'Optional[rep]' does not "
                           "exist as expected\n")


@pytest.mark.parametrize(("args", "refusal"), [
    ([], "Create, delete, describe, or change a topic."),
    (["--list", "--create"], "Command must include exactly one action: --list, --describe, "
                             "--create, --alter or --delete"),
    (["--create", "--topic", "t"], "--bootstrap-server must be specified"),
    (["--bootstrap-server", "h:1", "--create"], 'Missing required argument "[topic]"'),
    (["--bootstrap-server", "h:1", "--list", "--partitions", "3"],
     'Option "[partitions]" can\'t be used with option "[list]"'),
    (["--bootstrap-server", "h:1", "--describe", "--if-not-exists"],
     'Option "[if-not-exists]" can\'t be used with option "[describe]"'),
    (["--bootstrap-server", "h:1", "--create", "--topic", "t", "--partitions", "1",
      "--replica-assignment", "1:2"],
     'Option "[replica-assignment]" can\'t be used with option "[partitions]"'),
])
def test_topics_refusals_are_kafkas(args, refusal) -> None:
    refused = kafkette("topics", *args)
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[0] == refusal


def test_console_tools_refusals_are_kafkas() -> None:
    producer = kafkette("console-producer", "--bootstrap-server", "h:1")
    assert (producer.returncode, producer.stderr.splitlines()[0]) == (
        1, 'Missing required argument "[topic]"')
    consumer = kafkette("console-consumer", "--bootstrap-server", "h:1", "--topic", "t",
                        "--offset", "3")
    assert (consumer.returncode, consumer.stderr.splitlines()[0]) == (
        1, "The partition is required when offset is specified.")
    both = kafkette("console-consumer", "--bootstrap-server", "h:1", "--topic", "t",
                    "--group", "g", "--partition", "0")
    assert both.stderr.splitlines()[0] == "Options group and partition cannot be specified together."
    version = kafkette("--version")
    assert version.returncode == 0 and version.stdout.startswith("kafkette ")
