"""The installed package puts nothing generic into site-packages: a user project with its own
``storage`` package runs pytest (with kafkette's plugin loaded) against a non-editable install."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
USER_TEST = '''
import storage
import kafkette.broker.testing as plugin
from kafka import KafkaConsumer, KafkaProducer


def test_own_storage_package_and_kafkette_side_by_side(kafka_broker):
    assert storage.OWNER == "the user's project"
    assert plugin.__file__.startswith({target!r}), plugin.__file__
    producer = KafkaProducer(bootstrap_servers=kafka_broker)
    producer.send("orders", b"order-1").get(timeout=10)
    producer.close()
    consumer = KafkaConsumer("orders", bootstrap_servers=kafka_broker,
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    assert [m.value for m in consumer][:1] == [b"order-1"]
    consumer.close()
'''


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # A copy of the tracked tree, so a build never writes into the checkout.
    src = out / "src"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    for name in files.stdout.decode().split("\0"):
        if name and (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((REPO / name).read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(out), str(src)], check=True, capture_output=True, timeout=300)
    (built,) = out.glob("kafkette-*.whl")
    return built


def test_wheel_installs_only_under_kafkette(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        tops = {name.split("/", 1)[0] for name in zf.namelist()}
        names = zf.namelist()
        entry_points = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert {t for t in tops if not t.endswith(".dist-info")} == {"kafkette"}
    for package in ("broker", "broker/handlers", "broker/admin", "coordinator", "protocol",
                    "storage", "pipeline"):
        assert f"kafkette/{package}/__init__.py" in names
    # the console's static files ship as package data (no build step at install time)
    assert {"kafkette/broker/admin/static/console.js",
            "kafkette/broker/admin/static/console.css"} <= set(names)
    assert "kafkette = kafkette.broker.testing" in entry_points
    assert "kafkette = kafkette.broker.cli.main:main" in entry_points


def test_user_project_with_own_storage_package_runs_pytest(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=300)
    project = tmp_path / "project"
    (project / "storage").mkdir(parents=True)
    (project / "storage" / "__init__.py").write_text('OWNER = "the user\'s project"\n')
    (project / "tests").mkdir()
    (project / "tests" / "test_orders.py").write_text(
        textwrap.dedent(USER_TEST.format(target=str(target))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(project)])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout
