"""Every module of the packages stays under about 600 lines: one job a file."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "storage", "coordinator", "broker", "pipeline")
MAX_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    too_long = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = len(path.read_text().splitlines())
            if lines > MAX_LINES:
                too_long[str(path.relative_to(ROOT))] = lines
    assert too_long == {}
