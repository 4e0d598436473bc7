"""External tools the tests drive (kcat, ...), installed by the project itself.

On CI (``CI=true``) or with ``KAFKETTE_INSTALL_TOOLS=1`` a missing tool is fetched: a Debian
package with apt-get, kafkajs with npm, the Java client's jars from a PyPI wheel (92 MB).
Elsewhere nothing is downloaded: a missing tool makes its tests skip with the reason printed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_lock = threading.Lock()
_apt_updated = False
_failures: dict[str, str] = {}


def _may_fetch() -> bool:
    """CI, or a developer who asked for it: tests may download the tools they drive."""
    flag = os.environ.get("KAFKETTE_INSTALL_TOOLS") or os.environ.get("CI")
    return (flag or "").lower() in ("1", "true", "yes")


def _may_install() -> bool:
    return _may_fetch() and shutil.which("apt-get") is not None


def _not_fetched(what: str) -> str:
    return f"{what} is not installed; set KAFKETTE_INSTALL_TOOLS=1 to let the tests fetch it"


def _apt_install(package: str, *extra: str) -> str:
    """apt-get install ``package`` (caller holds _lock); '' on success, else the reason."""
    global _apt_updated
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    try:
        if not _apt_updated:
            subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True, env=env,
                           capture_output=True, timeout=300)
            _apt_updated = True
        subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", *extra, package], check=True,
                       env=env, capture_output=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        _failures[package] = f"apt-get install {package} failed: {exc} {detail[-300:]!r}"
        return _failures[package]
    return ""


def ensure_debian_tool(binary: str, package: str) -> tuple[str | None, str]:
    """Path of ``binary`` (installing ``package`` if allowed), or None and the reason."""
    with _lock:
        found = shutil.which(binary)
        if found:
            return found, ""
        if package in _failures:
            return None, _failures[package]
        if not _may_install():
            reason = (f"{binary} is not installed; set KAFKETTE_INSTALL_TOOLS=1 to let the tests "
                      f"apt-get install {package}")
            return None, reason
        reason = _apt_install(package)
        if reason:
            return None, reason
        found = shutil.which(binary)
        if not found:
            _failures[package] = f"{package} installed but {binary} is not on PATH"
            return None, _failures[package]
        return found, ""


# Tools that are not Debian packages, cached under .kafkette-tools/ (git-ignored) ----------------

ROOT = Path(__file__).resolve().parent.parent
TOOLS_DIR = Path(os.environ.get("KAFKETTE_TOOLS_DIR", ROOT / ".kafkette-tools"))
FLINK_WHEEL = "shigawire-apache-flink-libraries==2.0.0.post1"
KAFKAJS = "kafkajs@2.2.4"
JAVA_SOURCES = ROOT / "tests" / "compat" / "java"
_JARS = ("kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar", "snappy-java.jar")


@contextmanager
def _tools_lock(name: str) -> Iterator[None]:
    """One installer at a time, across threads and across processes (pytest-xdist, two runs)."""
    TOOLS_DIR.mkdir(parents=True, exist_ok=True)
    with _lock, open(TOOLS_DIR / f".{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(args: list[str], timeout: float, cwd: Path | None = None) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=timeout, cwd=cwd)


def _failed(key: str, what: str, exc: BaseException) -> tuple[None, str]:
    detail = getattr(exc, "stderr", b"") or b""
    if isinstance(detail, bytes):
        detail = detail.decode(errors="replace")
    _failures[key] = f"{what} failed: {exc} {detail[-400:]}".strip()
    return None, _failures[key]


def ensure_java_client() -> tuple[str | None, str]:
    """Classpath running ``KafketteClient`` (tests/compat/java) on kafka-clients 3.9.1.

    The jar comes from the PyPI wheel of pyflink's libraries (92 MB download, cached); the
    sources are compiled with the machine's javac and recompiled when they change.
    """
    java, javac = shutil.which("java"), shutil.which("javac")
    if not (java and javac):
        return None, "java/javac (JDK 17) not found on PATH"
    if "java" in _failures:
        return None, _failures["java"]
    with _tools_lock("java"):
        lib = TOOLS_DIR / "java" / "lib"
        classes = TOOLS_DIR / "java" / "classes"
        jars = [lib / name for name in _JARS]
        if not all(j.exists() for j in jars):
            if not _may_fetch():
                return None, _not_fetched(f"kafka-clients 3.9.1 (from the 92 MB PyPI wheel "
                                          f"{FLINK_WHEEL})")
            lib.mkdir(parents=True, exist_ok=True)
            download = TOOLS_DIR / "java" / "wheel"
            try:
                _run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                      "--disable-pip-version-check", FLINK_WHEEL, "-d", str(download)], 600)
                wheel = next(download.glob("*.whl"))
                with zipfile.ZipFile(wheel) as zf:
                    for name in _JARS:
                        (lib / name).write_bytes(zf.read(f"pyflink/lib/{name}"))
                shutil.rmtree(download, ignore_errors=True)
            except (subprocess.SubprocessError, OSError, StopIteration, KeyError,
                    zipfile.BadZipFile) as exc:
                return _failed("java", f"pip download {FLINK_WHEEL}", exc)
        classpath = os.pathsep.join([str(classes), *map(str, jars)])
        sources = sorted(JAVA_SOURCES.glob("*.java"))
        stamp = classes / ".sources"
        digest = "\n".join(f"{s.name}:{s.stat().st_mtime_ns}:{s.stat().st_size}" for s in sources)
        if not stamp.exists() or stamp.read_text() != digest:
            shutil.rmtree(classes, ignore_errors=True)
            classes.mkdir(parents=True)
            try:
                _run([javac, "-nowarn", "-d", str(classes), "-cp", classpath,
                      *map(str, sources)], 300)
            except (subprocess.SubprocessError, OSError) as exc:
                return _failed("java", "javac", exc)
            stamp.write_text(digest)
        return classpath, ""


def ensure_kafkajs() -> tuple[str | None, str]:
    """node_modules folder holding kafkajs 2.2.4 (npm install into .kafkette-tools/node)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not (node and npm):
        return None, "node/npm not found on PATH"
    if "kafkajs" in _failures:
        return None, _failures["kafkajs"]
    with _tools_lock("node"):
        prefix = TOOLS_DIR / "node"
        modules = prefix / "node_modules"
        if not (modules / "kafkajs" / "package.json").exists():
            if not _may_fetch():
                return None, _not_fetched(f"{KAFKAJS} (npm install)")
            prefix.mkdir(parents=True, exist_ok=True)
            try:
                _run([npm, "install", "--no-audit", "--no-fund", "--no-save", "--silent",
                      "--prefix", str(prefix), KAFKAJS], 600)
            except (subprocess.SubprocessError, OSError) as exc:
                return _failed("kafkajs", f"npm install {KAFKAJS}", exc)
        return str(modules), ""


def ensure_burrow() -> tuple[str | None, str]:
    """Burrow 1.2.1 (Debian package ``burrow``; its binary is ``Burrow``)."""
    return ensure_debian_tool("Burrow", "burrow")


ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")


def ensure_zookeeper() -> tuple[str | None, str]:
    """ZooKeeper's server jar (Debian ``zookeeper``): Burrow will not start without a ZooKeeper."""
    with _lock:
        if ZOOKEEPER_JAR.exists():
            return str(ZOOKEEPER_JAR), ""
        if "zookeeper" in _failures:
            return None, _failures["zookeeper"]
        if not _may_install():
            return None, ("ZooKeeper (needed by Burrow) is not installed; set "
                          "KAFKETTE_INSTALL_TOOLS=1 to let the tests apt-get install zookeeper")
        reason = _apt_install("zookeeper", "--no-install-recommends")
        if reason:
            return None, reason
        if not ZOOKEEPER_JAR.exists():
            _failures["zookeeper"] = f"zookeeper installed but {ZOOKEEPER_JAR} is missing"
            return None, _failures["zookeeper"]
        return str(ZOOKEEPER_JAR), ""


def ensure_kcat() -> tuple[str | None, str]:
    return ensure_debian_tool("kcat", "kcat")
