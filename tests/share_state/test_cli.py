"""``kafkette share-groups`` (kafka-share-groups.sh) against a real broker, run as a user runs
it (a real process): list, describe (offsets, members, state), reset-offsets, delete-offsets,
delete, and the command-line refusals."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from kafkette.broker.cli.main import main
from tests.tools import ROOT
from tests.wire import WireClient

SHARE_HEARTBEAT = 76


def share_groups(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkette.broker", "share-groups",
                           "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def heartbeat(client: WireClient, member: str, epoch: int) -> None:
    r = client.request(SHARE_HEARTBEAT, 1, group_id="workers", member_id=member,
                       member_epoch=epoch, rack_id=None,
                       subscribed_topic_names=("jobs",) if epoch == 0 else None)
    assert r.error_code == 0, r


class Member:
    """A share group member heartbeating in the background (its session must not expire
    while the commands run), until it leaves."""

    def __init__(self, bootstrap: str) -> None:
        self.client = WireClient(bootstrap, client_id="worker-client")
        heartbeat(self.client, "member-1", 0)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def _beat(self) -> None:
        while not self.stop.wait(0.2):
            heartbeat(self.client, "member-1", 1)

    def leave(self) -> None:
        self.stop.set()
        self.thread.join(5)
        heartbeat(self.client, "member-1", -1)
        self.client.close()


def test_share_groups_command(broker) -> None:
    boot = broker.bootstrap
    host, port = broker.address
    member = Member(boot)
    try:

        listed = share_groups(boot, "--list")
        assert (listed.returncode, listed.stdout) == (0, "workers\n")
        states = share_groups(boot, "--list", "--state")
        assert states.stdout == "GROUP           STATE\nworkers         Stable\n"

        members = share_groups(boot, "--describe", "--group", "workers", "--members")
        assert members.returncode == 0
        lines = members.stdout.splitlines()
        assert lines[0] == ""
        assert lines[1].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                    "ASSIGNMENT"]
        assert lines[2].split() == ["workers", "member-1", "/127.0.0.1", "worker-client", "2",
                                    "jobs:0,1"]
        assert lines[1].index("CONSUMER-ID") == 16 and lines[1].index("#PARTITIONS") == 64

        state = share_groups(boot, "--describe", "--group", "workers", "--state", "--verbose")
        coordinator = f"{host}:{port}  (1)"
        width = max(25, len(coordinator))
        assert state.stdout == (
            f"\n{'GROUP':<15} {'COORDINATOR (ID)':<{width}} {'STATE':<15} {'GROUP-EPOCH':<12} "
            f"{'ASSIGNMENT-EPOCH':<17} #MEMBERS"
            f"\n{'workers':<15} {coordinator:<{width}} {'Stable':<15} {'1':<12} {'1':<17} 1\n")

        live = share_groups(boot, "--reset-offsets", "--group", "workers", "--to-earliest",
                            "--execute")
        assert (live.returncode, live.stderr.strip()) == (1, "Share group 'workers' is not empty.")
    finally:
        member.leave()

    empty = share_groups(boot, "--describe", "--group", "workers", "--members")
    assert (empty.returncode, empty.stdout, empty.stderr) == (
        0, "", "\nShare group 'workers' has no active members.\n")
    offsets = share_groups(boot, "--describe", "--group", "workers")
    assert offsets.stdout.splitlines()[1:] == [
        f"{'GROUP':<15} {'TOPIC':<15} {'PARTITION':<10} {'START-OFFSET':<13} LAG",
        f"{'workers':<15} {'jobs':<15} {'0':<10} {'-':<13} -",
        f"{'workers':<15} {'jobs':<15} {'1':<10} {'-':<13} -"]

    plan = share_groups(boot, "--reset-offsets", "--group", "workers", "--topic", "jobs",
                        "--to-latest", "--dry-run")
    assert plan.returncode == 0, plan
    assert [line.split() for line in plan.stdout.splitlines() if line] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], ["workers", "jobs", "0", "10"],
        ["workers", "jobs", "1", "1"]]
    reset = share_groups(boot, "--reset-offsets", "--group", "workers", "--topic", "jobs:0",
                         "--to-earliest", "--execute")
    assert [line.split() for line in reset.stdout.splitlines() if line] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], ["workers", "jobs", "0", "0"]]
    verbose = share_groups(boot, "--describe", "--group", "workers", "--offsets", "--verbose")
    assert [line.split() for line in verbose.stdout.splitlines() if line] == [
        ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"],
        ["workers", "jobs", "0", "-", "0", "10"], ["workers", "jobs", "1", "-", "-", "-"]]

    deleted = share_groups(boot, "--delete-offsets", "--group", "workers", "--topic", "jobs",
                           "--topic", "gone")
    assert deleted.returncode == 1
    assert deleted.stdout == (
        f"\n{'TOPIC':<15} STATUS\n{'gone':<15} Error: This server does not host this "
        f"topic-partition.\n{'jobs':<15} Successful\n")
    missing = share_groups(boot, "--describe", "--group", "nobody")
    assert (missing.returncode, missing.stdout) == (
        1, "\nError: Share group 'nobody' does not exist.\n")

    gone = share_groups(boot, "--delete", "--group", "workers", "--group", "nobody")
    assert gone.returncode == 1
    assert gone.stdout == (
        "\nError: Deletion of some share groups failed:\n"
        "* Group 'nobody' could not be deleted due to: org.apache.kafka.common.errors."
        "GroupIdNotFoundException: Group 'nobody' is not a share group.\n"
        "\nThese share groups were deleted successfully: 'workers'\n")
    assert share_groups(boot, "--list").stdout == ""


@pytest.mark.parametrize("args, message", [
    ([], "Command must include exactly one action: --list, --describe, --delete, "
         "--reset-offsets, --delete-offsets."),
    (["--describe"], "Option [describe] takes one of these options: [all-groups], [group]"),
    (["--describe", "--group", "g", "--members", "--state"],
     "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
    (["--delete", "--group", "g", "--topic", "t"],
     "Option [delete] does not take the option: [topic]"),
    (["--delete-offsets", "--group", "g"],
     "Option [delete-offsets] takes the following options: [group], [topic]"),
    (["--reset-offsets", "--group", "g", "--to-earliest"],
     "Option [reset-offsets] takes the option: [execute] or [dry-run]"),
    (["--reset-offsets", "--group", "g", "--to-earliest", "--to-latest", "--execute"],
     'Option "[to-earliest]" can\'t be used with option "[to-latest]"'),
    (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
    (["--list", "--members"],
     "Option(s) [members] are unavailable given other options on the command line"),
    (["--reset-offsets", "--group", "g", "--topic", ":", "--to-earliest", "--dry-run"],
     "Invalid --topic ':': no topic name"),
    (["--list", "--command-config", "/nonexistent.properties"],
     "--command-config /nonexistent.properties: No such file or directory"),
])
def test_refusals(capsys, args: list[str], message: str) -> None:
    assert main(["share-groups", "--bootstrap-server", "127.0.0.1:1", *args]) == 1
    assert capsys.readouterr().err == f"kafkette share-groups: {message}\n"


def test_bootstrap_server_is_required(capsys) -> None:
    assert main(["share-groups", "--list"]) == 1
    assert capsys.readouterr().err == \
        'kafkette share-groups: Missing required argument "[bootstrap-server]"\n'
