"""Ctrl-C in ``kafkette pipeline lag`` stops it with one line, not pages of Spark tracebacks."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="needs the pipeline extra: pip install -e '.[test,pipeline]'")


def test_ctrl_c_stops_the_lag_job_with_one_line(kafka_broker_factory, tmp_path):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17+")
    broker = kafka_broker_factory()
    producer = broker.producer()
    for i in range(20):
        producer.produce("orders", f"order-{i}".encode())
    assert producer.flush(30) == 0
    consumer = broker.consumer({"group.id": "billing", "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    while consumer.poll(10) is None:
        pass
    consumer.commit(asynchronous=False)
    consumer.close()
    out = tmp_path / "lag"
    kafkette = Path(sys.executable).parent / "kafkette"
    # Its own process group, as a shell gives a foreground job: Ctrl-C is SIGINT to the group.
    job = subprocess.Popen([str(kafkette), "pipeline", "lag", "--log-dirs", broker.log_dirs,
                            "--out", str(out), "--master", "local[2]", "--conf",
                            "spark.ui.enabled=false"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert job.stdout is not None
        first = job.stdout.readline()  # the first table is being written: Spark is busy
        assert first.startswith("[kafkette pipeline] writing"), first
        os.killpg(job.pid, signal.SIGINT)
        _, stderr = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 130
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr[-3000:]
    assert stderr.rstrip().splitlines()[-1] == (
        f"kafkette pipeline: interrupted; {out} may hold part of the output")
