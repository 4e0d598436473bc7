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

from kafkette.broker.admin_cli import AdminClient  # noqa: E402
from tests.compat.kafka_python import produce  # noqa: E402


def test_lag_job_from_a_non_activated_venv(kafka_broker_factory, tmp_path):
    java = shutil.which("java")
    if java is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17+")
    broker = kafka_broker_factory(config={"num.partitions": "1"})
    broker.run(broker.broker.logs.create_topic("events", 1))
    produce(broker.bootstrap, "events", 10, partitions=1)
    with AdminClient(broker.bootstrap) as admin:
        assert admin.commit("reporting", {("events", 0): 4}) == {("events", 0): "NONE"}
    log_dirs = broker.config["log.dirs"]
    broker.stop()

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
    out = tmp_path / "out"
    result = subprocess.run([str(kafkette), "pipeline", "lag", "--log-dirs", log_dirs, "--out",
                             str(out), "--master", "local[1]"], env=env, capture_output=True,
                            text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "| reporting | events | 0 | 4 | 10 | 6 |" in (out / "summary.md").read_text()
