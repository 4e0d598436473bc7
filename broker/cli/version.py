"""``kafkette --version``: the installed version, as Kafka's tools print theirs."""

from __future__ import annotations


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("kafkette")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"
