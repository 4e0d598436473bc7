"""The client × scenario table of the last compat run (printed at the end, written as Markdown).

Tests named ``test_<scenario>[<client>]`` in tests/compat fill the table. It is written to
$KAFKETTE_COMPAT_RESULTS if set (e.g. tests/compat/RESULTS.md), else .kafkette-tools/.
"""

from __future__ import annotations

import datetime as dt
import platform
import re
from pathlib import Path

import pytest

from tests.tools import TOOLS_DIR

_NODE = re.compile(r"tests/compat/test_\w+\.py::test_(\w+)\[([\w.-]+)\]$")
SCENARIOS = ["metadata", "produce", "group_split", "leave_and_crash", "commit_resume",
             "restart_keeps_offsets", "lag"]
CLIENTS = ["aiokafka", "kafka-python", "confluent-kafka", "kcat", "java", "kafkajs", "burrow"]
_MARK = {"passed": "pass", "failed": "**FAIL**", "skipped": "skip"}


class ResultsRecorder:
    def __init__(self, target: Path | None) -> None:
        self.target = target or TOOLS_DIR / "compat-results.md"
        self.cells: dict[tuple[str, str], str] = {}
        self.skips: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        match = _NODE.search(report.nodeid)
        if not match:
            return
        scenario, client = match.groups()
        key = (client, scenario)
        if report.when == "call" or report.outcome != "passed":
            outcome = "failed" if report.failed else report.outcome
            if self.cells.get(key) != "failed":
                self.cells[key] = outcome
            if report.skipped and isinstance(report.longrepr, tuple):
                self.skips[client] = str(report.longrepr[2]).removeprefix("Skipped: ")

    def table(self) -> str:
        scenarios = [s for s in SCENARIOS if any(k[1] == s for k in self.cells)]
        clients = [c for c in CLIENTS if any(k[0] == c for k in self.cells)]
        lines = ["| client | " + " | ".join(s.replace("_", " ") for s in scenarios) + " |",
                 "|---|" + "---|" * len(scenarios)]
        for c in clients:
            cells = [_MARK.get(self.cells.get((c, s), ""), "—") for s in scenarios]
            lines.append(f"| {c} | " + " | ".join(cells) + " |")
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        lines.append("")
        lines.append(f"Last run: {stamp}, {platform.system()} {platform.machine()}, "
                     f"Python {platform.python_version()}. — = scenario not in the matrix for "
                     "that client.")
        for c, reason in sorted(self.skips.items()):
            lines.append(f"- {c} skipped: {reason}")
        return "\n".join(lines) + "\n"

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.cells:
            return
        text = self.table()
        terminalreporter.section("kafkette compatibility matrix")
        terminalreporter.write(text)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.target.write_text("# Compatibility matrix (last run)\n\n" + text)
        terminalreporter.write_line(f"written to {self.target}")
