"""Reading and checking one modern group type's coordinator configs (``group.consumer.*``,
``group.share.*``) from any ``name -> str`` getter, with ValueErrors that name the config."""

from __future__ import annotations

from collections.abc import Callable, Mapping


class GroupConfigReader:
    def __init__(self, get: Callable[[str], str | None], defaults: Mapping[str, str],
                 group_type: str) -> None:
        self._get = get
        self._defaults = defaults
        self._prefix = f"group.{group_type}."

    def value(self, name: str) -> str:
        """The configured value, else the default (a getter may raise KeyError or give None)."""
        try:
            found = self._get(name)
        except KeyError:
            found = None
        return self._defaults[name] if found is None else found

    def integer(self, name: str, minimum: int = 1) -> int:
        try:
            number = int(self.value(name))
        except ValueError:
            raise ValueError(f"{name} must be an integer, got {self.value(name)!r}") from None
        if number < minimum:
            raise ValueError(f"{name} must be at least {minimum}, got {number}")
        return number

    def bounded(self, suffix: str) -> int:
        """``group.<type>.<suffix>``, between its ``min.`` and ``max.`` bounds."""
        p = self._prefix
        low = self.integer(f"{p}min.{suffix}")
        high = self.integer(f"{p}max.{suffix}")
        default = self.integer(f"{p}{suffix}")
        if not low <= default <= high:
            raise ValueError(f"{p}{suffix} ({default}) must lie between {p}min.{suffix} ({low}) "
                             f"and {p}max.{suffix} ({high})")
        return default

    def heartbeat_and_session(self) -> tuple[int, int]:
        """(heartbeat interval ms, session timeout ms), each within its bounds, the heartbeat
        the shorter."""
        heartbeat_ms = self.bounded("heartbeat.interval.ms")
        session_ms = self.bounded("session.timeout.ms")
        if heartbeat_ms >= session_ms:
            raise ValueError(f"{self._prefix}heartbeat.interval.ms ({heartbeat_ms}) must be lower "
                             f"than {self._prefix}session.timeout.ms ({session_ms})")
        return heartbeat_ms, session_ms
