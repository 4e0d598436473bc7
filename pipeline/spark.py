"""Spark session for the pipeline, with the ``kafkette`` data source registered."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from .source import KafketteDataSource


def python_defaults(conf: Mapping[str, str]) -> dict[str, str]:
    """Spark's Python workers run this interpreter (the one with pyarrow and kafkette) unless the
    user chose one with PYSPARK_PYTHON or spark.pyspark.python; otherwise Spark starts the
    ``python3`` on PATH, which outside an activated venv lacks them."""
    if "spark.pyspark.python" in conf or os.environ.get("PYSPARK_PYTHON"):
        return {}
    os.environ["PYSPARK_PYTHON"] = sys.executable  # read by the JVM this process launches
    return {"spark.pyspark.python": sys.executable}


def session(master: str = "local[*]", conf: Mapping[str, str] | None = None,
            app_name: str = "kafkette-pipeline") -> SparkSession:
    builder = SparkSession.builder.master(master).appName(app_name)
    defaults = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "true",
    }
    if master.startswith("local"):
        # The tables are small next to the logs: a few shuffle partitions are enough locally.
        defaults["spark.sql.shuffle.partitions"] = "8"
    defaults.update(python_defaults(conf or {}))
    for key, value in {**defaults, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def register(spark: SparkSession) -> None:
    spark.dataSource.register(KafketteDataSource)
