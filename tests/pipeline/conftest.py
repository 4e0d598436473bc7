"""One local[2] Spark session for all pipeline tests (a session start costs 5-9 s)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.tools import ensure_debian_tool


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    pytest.importorskip("pyspark", reason="needs the pipeline extra: pip install -e '.[test,pipeline]'")
    if not os.environ.get("JAVA_HOME"):
        java, reason = ensure_debian_tool("java", "openjdk-17-jre-headless")
        if java is None:
            pytest.skip(f"Spark needs Java 17+: {reason}")
    from kafkette.pipeline.spark import session

    spark = session("local[2]", {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
    })
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()
