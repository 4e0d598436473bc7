"""A JSON document of dynamic configs kept in ``log.dirs`` (broker and group configs): read once
at start, rewritten durably (write, fsync, rename) on every change."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from kafkette.storage.recovery import write_durably

from ..config_def import ConfigError


def read_config_file(path: Path) -> dict[str, Any] | None:
    """The stored document, or None when there is none yet; a corrupt one stops the start."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is corrupt: {exc}") from None


async def write_config_file(path: Path, data: dict[str, Any]) -> None:
    """Replace the stored document (in a thread: the fsyncs never block the loop)."""
    await asyncio.to_thread(write_durably, path, json.dumps(data, indent=1, sort_keys=True))
