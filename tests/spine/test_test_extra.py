"""``pip install -e '.[test,pipeline]'`` (README's install command) brings every library a test
would otherwise skip for: each ``pytest.importorskip`` in tests/ names a module one of those
extras installs."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IMPORTORSKIP = re.compile(r"importorskip\(\s*[\"']([\w.]+)[\"']")


def _requirement_name(spec: str) -> str:
    return re.split(r"[\s\[<>=!~;]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_every_optional_test_import_is_in_the_test_or_pipeline_extra():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    declared = {_requirement_name(spec) for extra in ("test", "pipeline") for spec in extras[extra]}
    distributions = importlib.metadata.packages_distributions()
    modules = {match.group(1).split(".")[0]
               for path in (REPO / "tests").rglob("*.py")
               for match in IMPORTORSKIP.finditer(path.read_text())}
    assert modules, "no importorskip found: the pattern is stale"
    missing = {}
    for module in sorted(modules):
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not names & declared:
            missing[module] = sorted(names)
    assert missing == {}
