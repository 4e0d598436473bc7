"""Headless Chromium for the console tests: the DOM after the page's scripts ran, screenshots.

Debian's ``chromium`` is installed like the other tools (tests/tools.py: on CI or with
KAFKETTE_INSTALL_TOOLS=1); elsewhere the tests that need it skip. Nothing downloads a browser.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest

from tests.tools import ensure_debian_tool

# Virtual time the page may run (its first refreshes) before the DOM is taken.
BUDGET_MS = 5000
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--disable-dev-shm-usage", "--hide-scrollbars"]


def chromium() -> str:
    path, reason = ensure_debian_tool("chromium", "chromium")
    if path is None:
        pytest.skip(reason)
    return path


def _run(args: list[str], timeout: float = 90) -> bytes:
    with tempfile.TemporaryDirectory(prefix="kafkette-chromium-") as profile:
        done = subprocess.run([chromium(), *_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, timeout=timeout, cwd=profile)
    if done.returncode != 0:
        raise AssertionError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]!r}")
    return done.stdout


def dump_dom(url: str, budget_ms: int = BUDGET_MS) -> str:
    """The page's DOM, serialized after its scripts ran for ``budget_ms`` of virtual time."""
    return _run([f"--virtual-time-budget={budget_ms}", "--dump-dom", url]).decode()


def screenshot(url: str, path: str, width: int = 1280, height: int = 900,
               budget_ms: int = BUDGET_MS) -> None:
    _run([f"--virtual-time-budget={budget_ms}", f"--window-size={width},{height}",
          f"--screenshot={path}", url])


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    content: list[Node | str] = field(default_factory=list)  # children and text, in order

    @property
    def children(self) -> list[Node]:
        return [c for c in self.content if isinstance(c, Node)]

    @property
    def text(self) -> str:
        """The text inside, whitespace collapsed (what a reader sees, roughly)."""
        return " ".join(self._raw().split())

    def _raw(self) -> str:
        return "".join(c if isinstance(c, str) else " " + c._raw() + " "
                       if c.tag in ("br", "td", "th", "tr", "p", "div") else c._raw()
                       for c in self.content)

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        """Descendants by tag, by one of their classes and by attributes (``data_x`` = data-x)."""
        wanted = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [n for n in self.iter()
                if (tag is None or n.tag == tag)
                and (cls is None or cls in n.attrs.get("class", "").split())
                and all(n.attrs.get(k) == v for k, v in wanted.items())]

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, cls, **attrs)
        assert found, f"no <{tag or '*'} class={cls} {attrs}> in the page"
        return found[0]


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].content.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].content.append(data)


def parse(html: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(html)
    return builder.root
