"""Spark session for the pipeline, with the ``kafkette`` data source registered."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from .source import KafketteDataSource

# The JVMs started by ``session(own_process_group=True)``: a Ctrl-C does not reach them, so the
# command line ends them itself (pipeline/cli.py).
SPARK_JVMS: list[subprocess.Popen] = []


def python_defaults(conf: Mapping[str, str]) -> dict[str, str]:
    """Spark's Python workers run this interpreter (the one with pyarrow and kafkette) unless the
    user chose one with PYSPARK_PYTHON or spark.pyspark.python; otherwise Spark starts the
    ``python3`` on PATH, which outside an activated venv lacks them."""
    if "spark.pyspark.python" in conf or os.environ.get("PYSPARK_PYTHON"):
        return {}
    os.environ["PYSPARK_PYTHON"] = sys.executable  # read by the JVM this process launches
    return {"spark.pyspark.python": sys.executable}


def session(master: str = "local[*]", conf: Mapping[str, str] | None = None,
            app_name: str = "kafkette-pipeline", *, own_process_group: bool = False) -> SparkSession:
    """``own_process_group`` (a process's first session): Spark's JVM and its Python workers
    run in a session of their own, so a Ctrl-C at the terminal reaches this process only (they
    end with it: the JVM exits when its stdin, a pipe from this process, closes), not workers
    that would die mid-task."""
    builder = SparkSession.builder.master(master).appName(app_name)
    defaults = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "true",
    }
    if master.startswith("local"):
        # The tables are small next to the logs: a few shuffle partitions are enough locally.
        defaults["spark.sql.shuffle.partitions"] = "8"
    defaults.update(python_defaults(conf or {}))
    settings = {**defaults, **(conf or {})}
    for key, value in settings.items():
        builder = builder.config(key, value)
    if own_process_group and SparkSession.getActiveSession() is None:
        # A new context on a gateway launched here; the session below adopts it. (A process
        # that already has a session, such as a test calling the command line, keeps it.)
        spark_conf = (SparkConf().setMaster(master).setAppName(app_name)
                      .setAll(list(settings.items())))
        gateway = launch_gateway(spark_conf, popen_kwargs={"start_new_session": True})
        SPARK_JVMS.append(gateway.proc)
        SparkContext(conf=spark_conf, gateway=gateway)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def register(spark: SparkSession) -> None:
    spark.dataSource.register(KafketteDataSource)
