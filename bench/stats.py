"""Small helpers shared by the benchmark scripts."""

from __future__ import annotations

import os
import platform
import statistics
import sys


def summary(samples: list[float], unit: str = "s", scale: float = 1.0) -> str:
    values = sorted(v * scale for v in samples)
    return (f"median {statistics.median(values):.4g} {unit} "
            f"(min {values[0]:.4g}, max {values[-1]:.4g}, n={len(values)})")


def machine() -> str:
    return (f"{os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{platform.machine()}, {sys.platform}")
