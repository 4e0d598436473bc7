"""The packages type-check with mypy (config: ``[tool.mypy]`` in pyproject.toml).

mypy does not follow setuptools' editable-install finder, and the repository keeps each package
in a top-level folder installed as ``kafkette.<folder>``: the test lays out a ``kafkette`` tree
of symlinks to the folders and checks it as installed. Run by hand the same way:
``python -m pytest tests/spine/test_types.py``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "storage", "coordinator", "broker", "pipeline")


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (it is in the [test] extra)")
def test_packages_type_check(tmp_path: Path) -> None:
    tree = tmp_path / "kafkette"
    tree.mkdir()
    (tree / "__init__.py").write_text("")
    for package in PACKAGES:
        (tree / package).symlink_to(ROOT / package, target_is_directory=True)
    args = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary"]
    for package in PACKAGES:
        args += ["-p", f"kafkette.{package}"]
    result = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"mypy found type errors:\n{result.stdout}{result.stderr}"


IGNORE = re.compile(r"#\s*type:\s*ignore")
# The error code, then a comment saying why the checker cannot see what the code relies on.
EXPLAINED_IGNORE = re.compile(r"# type: ignore\[[a-z-]+(, [a-z-]+)*\]  # (?!noqa)\S")


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    unexplained = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
                   for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
                   for number, line in enumerate(path.read_text().splitlines(), 1)
                   if IGNORE.search(line) and not EXPLAINED_IGNORE.search(line)]
    assert not unexplained, "type: ignore without an error code and a reason:\n" + "\n".join(
        unexplained)
