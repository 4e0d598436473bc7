"""Start → first accepted connection: spawn the broker process, time until ApiVersions answers.

Every target is spawned the same way (bench.peers) on a port chosen beforehand and polled with a
connect + ApiVersions every millisecond. kafkette runs with its bytecode cache (as after
``pip install``). Baseline: ``python -c "import asyncio, uvloop"`` in the same environment,
i.e. what any asyncio Python server pays before its own first line runs (the interpreter, plus
asyncio, which imports ssl).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

from bench.figures.base import Context, Figure, Row
from bench.peers import ROOT, kafkette_env


class Startup(Figure):
    def measure(self, ctx: Context) -> dict[str, float]:
        server = ctx.target.spawn()
        try:
            return {"start": server.startup_s}
        finally:
            server.stop()
            shutil.rmtree(server.data_dir, ignore_errors=True)

    def baseline(self) -> dict[str, float]:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import asyncio, uvloop"], check=True,
                       env=kafkette_env(), cwd=ROOT)
        return {"start": time.perf_counter() - t0}


FIGURES = [Startup(
    name="startup", title="Start → first accepted connection (ApiVersions answered)",
    rows=(Row("start", "spawn → first ApiVersions answer", "ms", 1000),),
    fresh=True, baseline_label="python -c 'import asyncio, uvloop'",
)]
