"""Spark session for the pipeline, with the ``kafkette`` data source registered."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from .source import KafketteDataSource


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
    for key, value in {**defaults, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def register(spark: SparkSession) -> None:
    spark.dataSource.register(KafketteDataSource)
