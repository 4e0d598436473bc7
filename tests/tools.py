"""External tools the tests drive (kcat, ...), installed by the project itself.

On CI (``CI=true``) or with ``KAFKETTE_INSTALL_TOOLS=1`` a missing Debian package is installed
with apt-get; elsewhere a missing tool makes its tests skip with the reason printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

_lock = threading.Lock()
_apt_updated = False
_failures: dict[str, str] = {}


def _may_install() -> bool:
    flag = os.environ.get("KAFKETTE_INSTALL_TOOLS") or os.environ.get("CI")
    return (flag or "").lower() in ("1", "true", "yes") and shutil.which("apt-get") is not None


def ensure_debian_tool(binary: str, package: str) -> tuple[str | None, str]:
    """Path of ``binary`` (installing ``package`` if allowed), or None and the reason."""
    global _apt_updated
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
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
        try:
            if not _apt_updated:
                subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True, env=env,
                               capture_output=True, timeout=300)
                _apt_updated = True
            subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", package], check=True,
                           env=env, capture_output=True, timeout=600)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            _failures[package] = f"apt-get install {package} failed: {exc} {detail[-300:]!r}"
            return None, _failures[package]
        found = shutil.which(binary)
        if not found:
            _failures[package] = f"{package} installed but {binary} is not on PATH"
            return None, _failures[package]
        return found, ""
