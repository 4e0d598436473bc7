"""``kafkette reassign-partitions`` against three nodes: kafka-reassign-partitions.sh's
--execute, --verify, --list, --cancel and --generate output, and its refusals."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kafkette.broker.cli import reassign_command
from tests.cluster.test_reassignments_wire import alter, create

TOPIC = "tool-moves"


def tool(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = reassign_command.main(list(argv), out)
    return code, out.getvalue()


def moves_file(tmp_path: Path, name: str, moves: dict[int, list[int]]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": p, "replicas": r} for p, r in moves.items()]}))
    return str(path)


def test_execute_verify_list_cancel(kafka_cluster, tmp_path: Path) -> None:
    bootstrap = kafka_cluster.bootstrap.split(",")[0]
    create(bootstrap, [[1, 2], [2, 3]], TOPIC)
    move = moves_file(tmp_path, "move.json", {0: [2, 1], 1: [3, 2]})
    base = ("--bootstrap-server", bootstrap)
    assert tool(*base, "--execute", "--reassignment-json-file", move) == (0, (
        "Current partition replica assignment\n\n"
        '{"version":1,"partitions":[{"topic":"tool-moves","partition":0,"replicas":[1,2],'
        '"log_dirs":["any","any"]},{"topic":"tool-moves","partition":1,"replicas":[2,3],'
        '"log_dirs":["any","any"]}]}\n\n'
        "Save this to use as the --reassignment-json-file option during rollback\n"
        f"Successfully started partition reassignments for {TOPIC}-0,{TOPIC}-1\n"))
    assert tool(*base, "--verify", "--reassignment-json-file", move) == (0, (
        f"Status of partition reassignment:\nReassignment of partition {TOPIC}-0 is completed.\n"
        f"Reassignment of partition {TOPIC}-1 is completed.\n"))
    back = moves_file(tmp_path, "back.json", {0: [1, 2]})
    assert tool(*base, "--verify", "--reassignment-json-file", back)[1].splitlines()[1] == (
        f"There is no active reassignment of partition {TOPIC}-0, but replica set is 2,1 rather "
        "than 1,2.")
    assert tool(*base, "--list") == (0, "No partition reassignments found.\n")

    kafka_cluster.stop_node(3)
    alter(bootstrap, {(TOPIC, 1): [3, 1]})  # waits for 3
    assert tool(*base, "--list") == (0, (
        f"Current partition reassignments:\n{TOPIC}-1: replicas: 3,1,2. adding: 1. removing: 2.\n"))
    waiting = moves_file(tmp_path, "waiting.json", {1: [3, 1]})
    assert tool(*base, "--verify", "--reassignment-json-file", waiting)[1].splitlines()[1] == (
        f"Reassignment of partition {TOPIC}-1 is still in progress.")
    code, text = tool(*base, "--execute", "--reassignment-json-file", back)
    assert code == 1 and text.startswith("Cannot execute because there is an existing partition")
    assert tool(*base, "--cancel", "--reassignment-json-file", waiting) == (0, (
        f"Successfully cancelled partition reassignment for: {TOPIC}-1\n"
        "None of the specified partition moves are active.\n"))
    assert tool(*base, "--cancel", "--reassignment-json-file", waiting) == (0, (
        "None of the specified partition reassignments are active.\n"
        "None of the specified partition moves are active.\n"))


def test_refusals_and_generate(kafka_cluster, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap = kafka_cluster.bootstrap.split(",")[0]
    create(bootstrap, [[1, 2], [2, 3]], TOPIC)
    base = ("--bootstrap-server", bootstrap)
    twice = moves_file(tmp_path, "twice.json", {0: [1, 1]})
    assert tool(*base, "--execute", "--reassignment-json-file", twice) == (1, (
        "Error: Partition replica lists may not contain duplicate entries: "
        f"{TOPIC}-0 contains multiple entries for 1\n"))
    assert tool(*base, "--execute", "--reassignment-json-file",
                moves_file(tmp_path, "unknown.json", {0: [1, 9]})) == (
        1, "Error: Unknown broker id 9\n")
    shrink = moves_file(tmp_path, "shrink.json", {0: [1], 1: [1, 2]})
    code, text = tool(*base, "--execute", "--reassignment-json-file", shrink,
                      "--disallow-replication-factor-change")
    assert code == 1 and text.splitlines()[-2:] == [
        "Error reassigning partition(s):",
        f"{TOPIC}-0: The replication factor is changed from 2 to 1"]
    assert tool(*base, "--execute", "--reassignment-json-file",
                moves_file(tmp_path, "missing.json", {9: [1]})) == (1, (
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Unable to find "
        f"partition: {TOPIC}-9\n"))

    assert tool(*base, "--list", "--broker-list", "1") == (1, "")
    assert 'Option "[broker-list]" can\'t be used with action "[list]"' in capsys.readouterr().err
    assert tool(*base, "--list", "--verify") == (1, "")
    assert "Command must include exactly one action" in capsys.readouterr().err

    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": TOPIC}]}))
    code, text = tool(*base, "--generate", "--topics-to-move-json-file", str(topics),
                      "--broker-list", "3,1")
    assert code == 0
    lines = text.splitlines()
    assert lines[0] == "Current partition replica assignment" and lines[3] == (
        "Proposed partition reassignment configuration")
    proposed = json.loads(lines[4])["partitions"]
    assert [(p["partition"], p["replicas"]) for p in proposed] == [(0, [3, 1]), (1, [1, 3])]
