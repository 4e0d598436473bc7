"""``pip install -e '.[test]'`` then ``pytest``: the suite collects without the pipeline extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.tools import ROOT

# The pipeline extra's packages made unimportable, as in a venv with only the [test] extra.
WITHOUT_PIPELINE_EXTRA = textwrap.dedent("""\
    import sys

    BLOCKED = ("pyspark", "pandas", "pyarrow", "matplotlib", "numpy")

    class Blocker:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Blocker)
    import pytest

    sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"]))
    """)


def test_suite_collects_without_the_pipeline_extra():
    result = subprocess.run([sys.executable, "-c", WITHOUT_PIPELINE_EXTRA], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "error" not in result.stdout.splitlines()[-1].lower(), result.stdout[-3000:]
    assert "tests/spine/test_collection.py::test_suite_collects_without_the_pipeline_extra" \
        in result.stdout
