"""Kafka wire protocol: framing, headers and codecs built on kio. Pure, no I/O."""

import sys
from typing import Any

# kio imports hypothesis (when installed) only to register test strategies; that costs about
# 170 ms of broker start-up. Hide it while kio's primitive types load, unless something already
# imported it. A finder does it when kio is first imported, not this package: the broker's early
# listener answers ApiVersions before anything needs kio (broker/boot.py).
_KIO_TYPES = "kio.static.primitive"


class _KioWithoutHypothesis:
    """Meta-path finder, used once: loads ``kio.static.primitive`` with hypothesis hidden."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        if name != _KIO_TYPES:
            return None
        sys.meta_path.remove(cls)  # type: ignore[arg-type]
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is not None and spec.loader is not None and "hypothesis" not in sys.modules:
            spec.loader = _HidingLoader(spec.loader)
        return spec


class _HidingLoader:
    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> Any:  # get_source, get_resource_reader, ...
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]
        try:
            self._loader.exec_module(module)
        finally:
            del sys.modules["hypothesis"]


if _KIO_TYPES not in sys.modules and "hypothesis" not in sys.modules:
    sys.meta_path.insert(0, _KioWithoutHypothesis)  # type: ignore[arg-type]
