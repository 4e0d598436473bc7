"""What a figure is: rows it measures, APIs it needs, and one ``measure`` per run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.figures.wire import API_NAMES, Unsupported
from bench.peers import Server, Target


class NotApplicable(Exception):
    """This target cannot do this figure; the message is the reason printed as n/a."""


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    unit: str
    scale: float = 1.0  # multiply the measured value (seconds, bytes, ...) by this to print
    higher_is_better: bool = False


@dataclass
class Context:
    target: Target
    server: Server | None  # None for figures that start their own process per run
    state: Any
    run: int
    warmup: bool


@dataclass
class Figure:
    name: str
    title: str
    rows: tuple[Row, ...]
    needs: tuple[int, ...] = ()
    fresh: bool = False  # True: measure() starts (and stops) its own broker each run
    baseline_label: str = ""  # what the baseline column holds, if the figure has one
    # Footnotes: "target" for every row, or "target:row" for one row.
    notes: dict[str, str] = field(default_factory=dict)

    scaling: bool = False  # True: opt-in (``--scaling`` / ``--only scaling``), not in ``all``

    def target_for(self, target: Target) -> Target:
        """The target as this figure runs it (e.g. with extra config); NotApplicable if it can't."""
        return target

    def check(self, server: Server) -> None:
        missing = [k for k in self.needs if not server.supports(k)]
        if missing:
            names = ", ".join(f"{API_NAMES.get(k, k)} ({k})" for k in missing)
            raise NotApplicable(f"not implemented yet: no {names} in ApiVersions")

    def prepare(self, server: Server) -> Any:
        return None

    def measure(self, ctx: Context) -> dict[str, float]:
        raise NotImplementedError

    def baseline(self) -> dict[str, float]:
        """Rows measured without any broker (a machine floor), once per run."""
        return {}

    def note(self, target: str, row: str) -> str | None:
        return self.notes.get(f"{target}:{row}") or self.notes.get(target)


def reason(exc: BaseException) -> str:
    if isinstance(exc, NotApplicable | Unsupported):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"failed: {type(exc).__name__}{': ' + text[:160] if text else ''}"
