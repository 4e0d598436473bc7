"""``kafkette groups``: list, describe, delete and reset-offsets against a real broker."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafkette.broker.cli.admin_client import AdminClient
from kafkette.broker.cli.main import main
from kafkette.protocol.consumer_protocol import assignment_partitions_or_empty
from tests.compat.kafka_python import join, produce
from tests.tools import ROOT

TOPIC, GROUP = "cli-topic", "cli-group"


@pytest.fixture
def broker(kafka_broker_factory):
    broker = kafka_broker_factory(**{"num.partitions": 3})
    broker.run(broker.broker.logs.create_topic(TOPIC, 3))
    produce(broker.bootstrap, TOPIC, 30)
    return broker


@pytest.fixture
def member(broker):
    """A live member of GROUP owning all 3 partitions, with commits 10, 5 and none."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=GROUP,
                             client_id="cli-client", enable_auto_commit=False,
                             session_timeout_ms=6000, heartbeat_interval_ms=500)
    join(consumer, TOPIC)
    assert len(consumer.assignment()) == 3
    consumer.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(10, "", -1),
                     TopicPartition(TOPIC, 1): OffsetAndMetadata(5, "", -1)})
    yield consumer
    consumer.close()


def groups(capsys, bootstrap: str, *args: str) -> tuple[int, list[list[str]]]:
    code = main(["groups", "--bootstrap-server", bootstrap, *args])
    out = capsys.readouterr().out
    return code, [line.split() for line in out.splitlines() if line.strip()]


def run_groups(*args: str) -> subprocess.CompletedProcess:
    """``kafkette groups ...`` as a user runs it: a real process."""
    return subprocess.run([sys.executable, "-m", "kafkette.broker", "groups", *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


OFFSETS_HEADER = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                  "CONSUMER-ID", "HOST", "CLIENT-ID"]


@pytest.mark.parametrize("form", ["kafka", "short", "bootstrap-after-subcommand"])
def test_describe_live_group_shows_summary_lag_and_owner(broker, member, form) -> None:
    args = {"kafka": ["--bootstrap-server", broker.bootstrap, "--describe", "--group", GROUP],
            "short": ["--bootstrap-server", broker.bootstrap, "describe", GROUP],
            "bootstrap-after-subcommand": ["describe", GROUP, "--bootstrap-server", broker.bootstrap],
            }[form]
    result = run_groups(*args)
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines() if line.strip()]
    # The summary block (rpk group describe): state, assignor, members, total lag.
    host, port = broker.address
    assert lines[:6] == [["GROUP", GROUP], ["COORDINATOR", f"{host}:{port}", "(1)"],
                         ["STATE", "Stable"], ["ASSIGNOR", "range"], ["MEMBERS", "1"],
                         ["TOTAL-LAG", "5"]]
    assert lines[6] == OFFSETS_HEADER
    rows = {int(r[2]): r for r in lines[7:]}
    assert sorted(rows) == [0, 1, 2]
    assert rows[0][:6] == [GROUP, TOPIC, "0", "10", "10", "0"]
    assert rows[1][:6] == [GROUP, TOPIC, "1", "5", "10", "5"]
    assert rows[2][:6] == [GROUP, TOPIC, "2", "-", "10", "-"]
    for r in rows.values():
        assert r[6].startswith("cli-client-") and r[7] == "/127.0.0.1" and r[8] == "cli-client"


def test_describe_members_state_offsets_and_all_groups(capsys, broker, member) -> None:
    code, lines = groups(capsys, broker.bootstrap, "--describe", "--group", GROUP, "--members")
    assert code == 0 and lines[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    assert lines[1][0] == GROUP and lines[1][1].startswith("cli-client-") and lines[1][2:] == \
        ["/127.0.0.1", "cli-client", "3"]
    code, lines = groups(capsys, broker.bootstrap, "--describe", "--group", GROUP, "--members",
                         "--verbose")
    assert code == 0 and lines[0][-1] == "ASSIGNMENT" and lines[1][-1] == f"{TOPIC}:0,1,2"
    code, lines = groups(capsys, broker.bootstrap, "--describe", "--group", GROUP, "--state")
    host, port = broker.address
    assert code == 0 and lines == [
        ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
        [GROUP, f"{host}:{port}", "(1)", "range", "Stable", "1"]]
    code, lines = groups(capsys, broker.bootstrap, "--describe", "--group", GROUP, "--offsets")
    assert code == 0 and lines[6] == OFFSETS_HEADER and len(lines) == 10
    code, lines = groups(capsys, broker.bootstrap, "--describe", "--all-groups", "--state")
    assert code == 0 and [r[0] for r in lines[1:]] == [GROUP]


def test_list_state_filter_and_type(capsys, broker, member) -> None:
    code, lines = groups(capsys, broker.bootstrap, "list")
    assert code == 0 and [GROUP] in lines
    code, lines = groups(capsys, broker.bootstrap, "--list")
    assert code == 0 and [GROUP] in lines
    code, lines = groups(capsys, broker.bootstrap, "list", "--state")
    assert code == 0 and lines == [["GROUP", "STATE"], [GROUP, "Stable"]]
    code, lines = groups(capsys, broker.bootstrap, "--list", "--state", "stable,empty")
    assert code == 0 and lines == [["GROUP", "STATE"], [GROUP, "Stable"]]
    code, lines = groups(capsys, broker.bootstrap, "--list", "--state", "empty")
    assert code == 0 and lines == [["GROUP", "STATE"]]
    code, lines = groups(capsys, broker.bootstrap, "--list", "--type")
    assert code == 0 and lines == [["GROUP", "TYPE"], [GROUP, "Classic"]]


def test_reset_offsets_needs_an_inactive_group(capsys, broker, member) -> None:
    code, lines = groups(capsys, broker.bootstrap, "reset-offsets", GROUP, "--all-topics",
                         "--to-earliest", "--execute")
    assert code == 1
    assert "inactive" in " ".join(lines[0]) and "Stable" in " ".join(lines[0])


REFUSALS = [
    (["--describe"], "Option [describe] takes one of these options: [all-groups], [group]"),
    (["--list", "--describe", "--group", GROUP],
     "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
     "--delete-offsets"),
    ([], "Command must include exactly one action"),
    (["--describe", "--group", GROUP, "--members", "--state"],
     "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
    (["--describe", "--group", GROUP, "--all-groups"],
     'Option "[group]" can\'t be used with option "[all-groups]"'),
    (["--list", "--group", GROUP], 'Option "[group]" can\'t be used with option "[list]"'),
    (["--delete", "--group", GROUP, "--topic", TOPIC],
     "The consumer does not support topic-specific offset deletion from a consumer group."),
    (["--delete-offsets", "--group", GROUP],
     "Option [delete-offsets] takes the following options: [group], [topic]"),
    (["--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest", "--execute",
      "--dry-run"], "Option [reset-offsets] only accepts one of [execute] and [dry-run]"),
    (["--reset-offsets", "--group", GROUP, "--to-earliest"],
     "One of the reset scopes should be defined: --all-topics, --topic."),
    (["--reset-offsets", "--group", GROUP, "--topic", TOPIC],
     "Option '[reset-offsets]' requires one of the following scenarios: [to-offset], [shift-by], "
     "[to-datetime], [by-duration], [to-earliest], [to-latest], [to-current], [from-file]"),
    (["--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest", "--to-latest"],
     'Option "[to-earliest]" can\'t be used with option "[to-latest]"'),
    (["--reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:x", "--to-earliest"],
     f"Invalid --topic '{TOPIC}:x': partitions must be numbers, as in {TOPIC}:0,1"),
    (["--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-datetime", "yesterday"],
     "Error parsing timestamp. It does not contain a 'T' according to ISO8601 format"),
    (["--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-datetime", "2024-13-01T00:00"],
     'Unparseable date: "2024-13-01T00:00Z"'),
    (["--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--by-duration", "1h"],
     "Text cannot be parsed to a Duration: 1h"),
    (["--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-offset", "ten"],
     "argument --to-offset: invalid int value: 'ten'"),
    (["--reset-offsets", "--group", GROUP, "--from-file", "/nonexistent.csv"],
     "--from-file /nonexistent.csv: No such file or directory"),
    (["--list", "--export"], "Options --dry-run, --execute, --export and --all-topics can only be "
                             "used with [reset-offsets]"),
    (["--list", "--command-config", "/nonexistent.properties"],
     "--command-config /nonexistent.properties: No such file or directory"),
    (["--list", "--state", "sleeping"], "Invalid state list 'sleeping'. Valid states are: "),
    (["--list", "--bogus"], "unrecognized arguments: --bogus"),
    (["describe", GROUP, "extra", "--members", "--state"], "takes at most one of these options"),
]


@pytest.mark.parametrize(("args", "message"), REFUSALS)
def test_refusals_are_one_line_with_kafkas_message(broker, member, args, message) -> None:
    before = AdminClient(broker.bootstrap).committed(GROUP)
    result = run_groups("--bootstrap-server", broker.bootstrap, *args)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert result.stderr.startswith("kafkette groups: ")
    assert AdminClient(broker.bootstrap).committed(GROUP) == before  # nothing was committed


def test_bootstrap_forms(broker, member) -> None:
    no_port = run_groups("--bootstrap-server", "localhost", "--list")
    assert no_port.returncode == 1 and no_port.stderr == \
        "kafkette groups: Invalid url in bootstrap.servers: localhost\n"
    # A list: the first server that answers is used, as Kafka's clients do.
    listed = run_groups("--bootstrap-server", f"127.0.0.1:1,{broker.bootstrap}", "--list")
    assert listed.returncode == 0 and listed.stdout.split() == [GROUP], listed.stderr
    down = run_groups("--bootstrap-server", "127.0.0.1:1", "--list")
    assert down.returncode == 1 and down.stderr.startswith("kafkette groups: cannot connect to")
    assert "Traceback" not in down.stderr


def test_dry_run_and_execute(broker, member) -> None:
    member.close()
    base = ["--bootstrap-server", broker.bootstrap, "--reset-offsets", "--group", GROUP,
            "--topic", f"{TOPIC}:0", "--to-offset", "3"]
    for flags, warned in (([], True), (["--dry-run"], False)):
        result = run_groups(*base, *flags)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", GROUP, TOPIC,
                                         "0", "3"]
        assert ("No action will be performed" in result.stderr) is warned
        assert AdminClient(broker.bootstrap).committed(GROUP)[(TOPIC, 0)] == 10  # unchanged
    result = run_groups(*base, "--execute")
    assert result.returncode == 0 and result.stderr == ""
    assert AdminClient(broker.bootstrap).committed(GROUP)[(TOPIC, 0)] == 3


def test_export_then_reset_from_file(broker, member, tmp_path) -> None:
    member.close()
    exported = run_groups("--bootstrap-server", broker.bootstrap, "--reset-offsets", "--group",
                          GROUP, "--topic", f"{TOPIC}:0,2", "--to-offset", "7", "--dry-run",
                          "--export")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == f"{TOPIC},0,7\n{TOPIC},2,7\n"
    plan = tmp_path / "plan.csv"
    plan.write_text(exported.stdout + f"{TOPIC},1,99\n")  # 99 is past the log end: clamped to 10
    applied = run_groups("--bootstrap-server", broker.bootstrap, "--reset-offsets", "--group",
                         GROUP, "--from-file", str(plan), "--execute")
    assert applied.returncode == 0, applied.stderr
    assert AdminClient(broker.bootstrap).committed(GROUP) == {(TOPIC, 0): 7, (TOPIC, 1): 10,
                                                              (TOPIC, 2): 7}


def test_delete_offsets(broker, member) -> None:
    refused = run_groups("--bootstrap-server", broker.bootstrap, "--delete-offsets", "--group",
                         GROUP, "--topic", TOPIC)
    assert refused.returncode == 1  # the live member is subscribed to the topic
    assert "GROUP_SUBSCRIBED_TO_TOPIC" in refused.stdout
    member.close()
    result = run_groups("delete-offsets", GROUP, "--topic", f"{TOPIC}:0",
                        "--bootstrap-server", broker.bootstrap)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == f"Request succeeded for deleting offsets from group {GROUP}."
    assert result.stdout.split()[-3:] == [TOPIC, "0", "Successful"]
    assert AdminClient(broker.bootstrap).committed(GROUP) == {(TOPIC, 1): 5}


def test_delete_refuses_a_live_group_then_deletes(capsys, broker, member) -> None:
    code, lines = groups(capsys, broker.bootstrap, "delete", GROUP)
    assert code == 1 and "NON_EMPTY_GROUP" in " ".join(lines[-1])
    member.close()
    code = main(["groups", "--bootstrap-server", broker.bootstrap, "describe", GROUP])
    captured = capsys.readouterr()
    assert code == 0 and captured.err == f"\nConsumer group '{GROUP}' has no active members.\n"
    assert captured.out.splitlines()[2] == "STATE       Empty"
    code, lines = groups(capsys, broker.bootstrap, "--delete", "--all-groups")
    assert code == 0 and "successful" in " ".join(lines[0])
    code, lines = groups(capsys, broker.bootstrap, "list")
    assert [GROUP] not in lines


def test_reset_offsets(capsys, broker, member) -> None:
    member.close()
    with AdminClient(broker.bootstrap) as admin:
        before = admin.committed(GROUP)
    # Dry run by default: prints the plan, commits nothing.
    code, lines = groups(capsys, broker.bootstrap, "reset-offsets", GROUP, "--topic", TOPIC,
                         "--to-earliest")
    assert code == 0 and lines[1:4] == [[GROUP, TOPIC, str(p), "0"] for p in range(3)]
    with AdminClient(broker.bootstrap) as admin:
        assert admin.committed(GROUP) == before
    cases = [
        (["--topic", f"{TOPIC}:0,1", "--shift-by", "-3"], {0: 7, 1: 2}),
        (["--topic", f"{TOPIC}:2", "--to-offset", "4"], {0: 7, 1: 2, 2: 4}),
        (["--topic", f"{TOPIC}:1", "--to-offset", "99"], {0: 7, 1: 10, 2: 4}),  # clamped
        (["--all-topics", "--to-latest"], {0: 10, 1: 10, 2: 10}),
        (["--topic", TOPIC, "--to-datetime", "2000-01-01T00:00:00"], {0: 0, 1: 0, 2: 0}),
        (["--topic", f"{TOPIC}:1", "--shift-by", "4"], {0: 0, 1: 4, 2: 0}),
        (["--all-topics", "--to-current"], {0: 0, 1: 4, 2: 0}),
        (["--topic", TOPIC, "--by-duration", "PT0S"], {0: 10, 1: 10, 2: 10}),  # none since now
        (["--topic", TOPIC, "--by-duration", "P1D"], {0: 0, 1: 0, 2: 0}),  # all written today
    ]
    for args, expected in cases:
        code, _lines = groups(capsys, broker.bootstrap, "reset-offsets", GROUP, *args, "--execute")
        assert code == 0, args
        with AdminClient(broker.bootstrap) as admin:
            assert admin.committed(GROUP) == {(TOPIC, p): o for p, o in expected.items()}, args
    # A consumer of the group starts where the reset put it.
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=GROUP,
                             enable_auto_commit=False)
    consumer.partitions_for_topic(TOPIC)
    consumer.subscribe([TOPIC])
    try:
        seen: list = []
        for _ in range(20):
            for records in consumer.poll(timeout_ms=1000).values():
                seen += records
            if len(seen) >= 30:
                break
        assert len(seen) == 30
    finally:
        consumer.close()


def test_unknown_group_and_unreachable_broker(capsys, broker) -> None:
    code, lines = groups(capsys, broker.bootstrap, "describe", "no-such-group")
    assert code == 1 and lines[0] == ["Error:", "Consumer", "group", "'no-such-group'", "does",
                                      "not", "exist."]
    code = main(["groups", "--bootstrap-server", "127.0.0.1:1", "list"])
    assert code == 1 and "cannot connect" in capsys.readouterr().err


def test_console_script_entry_point(broker, member) -> None:
    proc = subprocess.run([sys.executable, "-m", "kafkette.broker", "groups", "--bootstrap-server",
                           broker.bootstrap, "describe", GROUP], capture_output=True, text=True,
                          timeout=30, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "CURRENT-OFFSET" in proc.stdout and TOPIC in proc.stdout


def test_assignment_partitions_or_empty() -> None:
    data = (b"\x00\x01" + b"\x00\x00\x00\x02"
            + b"\x00\x01a" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x03"
            + b"\x00\x01b" + b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff")
    assert assignment_partitions_or_empty(data) == [("a", 0), ("a", 3)]
    assert assignment_partitions_or_empty(b"") == [] and assignment_partitions_or_empty(b"\x00\x01\x00\x00\x00\x05") == []


def test_help_is_plain_text_and_every_flag_says_what_it_does() -> None:
    shown = run_groups("--help")
    assert shown.returncode == 0
    text = shown.stdout
    assert "``" not in text  # no reStructuredText markup
    options = text.split("options:", 1)[1].split("usage by action:", 1)[0]
    lines = options.splitlines()
    undocumented = []
    for i, line in enumerate(lines):
        if not line.startswith("  -"):
            continue
        has_help = "  " in line.strip()  # the help starts on the option's line
        continues = i + 1 < len(lines) and lines[i + 1].startswith(" " * 24)  # or below it
        if not (has_help or continues):
            undocumented.append(line.split()[0])
    assert sum(line.startswith("  -") for line in lines) > 25
    assert undocumented == []
