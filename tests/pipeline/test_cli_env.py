"""``kafkette pipeline lag`` from a venv that is not activated: Spark's Python workers must run
the interpreter running kafkette, not the ``python3`` first on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="needs the pipeline extra: pip install -e '.[test,pipeline]'")
pytest.importorskip("pyarrow", reason="needs the pipeline extra")


def test_readme_demo_then_lag_job_from_a_non_activated_venv(tmp_path):
    """README's two pipeline commands, with the venv not activated and a foreign python3 first
    on PATH."""
    java = shutil.which("java")
    if java is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17+")
    demo, out = tmp_path / "kafkette-demo", tmp_path / "kafkette-lag"
    # README's demo, its timeline run in half the time
    ran = subprocess.run([sys.executable, "-m", "kafkette.pipeline.demo", str(demo),
                          "--seconds", "12"],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]

    # First on PATH: a python3 that is not the venv's (it cannot even start a worker).
    shims = tmp_path / "bin"
    shims.mkdir()
    for name in ("python3", "python"):
        shim = shims / name
        shim.write_text("#!/bin/sh\necho 'not the venv python' >&2\nexit 3\n")
        shim.chmod(0o755)
    path = [str(shims)] + ([str(Path(java).parent)] if java else []) + ["/usr/bin", "/bin"]
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(path)
    kafkette = Path(sys.executable).parent / "kafkette"  # by absolute path, as from cron or CI
    result = subprocess.run([str(kafkette), "pipeline", "lag", "--log-dirs", str(demo), "--out",
                             str(out), "--master", "local[2]"], env=env, capture_output=True,
                            text=True, timeout=900, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    summary = (out / "summary.md").read_text()
    assert "| billing | 3 |" in summary and "| audit | 3 |" in summary, summary
    assert (out / "lag.png").stat().st_size > 10_000
