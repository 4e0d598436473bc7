"""Nothing outside the coordinator runtime touches its private names.

The runtime (the coordinator/runtime/ package) is used through its
public seam: ``PartitionContext.answer``/``write``/``read``/``schedule``..., ``pending()``,
``state``. A private name of the runtime (``_open``, ``_inflight``, ``_fail``, ``_Batch``...)
used anywhere else, on anything but ``self``/``cls``, imported by name or looked up with
``getattr``, fails this test: a hot path that needs more gets a public method instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "storage", "coordinator", "broker", "pipeline")


def _runtime_files() -> list[Path]:
    package = ROOT / "coordinator" / "runtime"
    if package.is_dir():
        return sorted(package.rglob("*.py"))
    return [ROOT / "coordinator" / "runtime.py"]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def runtime_privates() -> set[str]:
    """Private names the runtime defines: module-level names, methods, and attributes it
    sets on ``self``."""
    names: set[str] = set()
    for path in _runtime_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = node.name
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            else:
                continue
            if _is_private(name):
                names.add(name)
    return names


def _is_runtime_module(module: str) -> bool:
    module = module.removeprefix("kafkette.")
    return module == "coordinator.runtime" or module.startswith("coordinator.runtime.")


def private_uses(path: Path, privates: set[str]) -> list[str]:
    """``file:line name`` for each use of a runtime private in ``path``."""
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in privates:
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                out.append(f"{rel}:{node.lineno} .{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            relative_runtime = node.level and "runtime" in (node.module or "").split(".")
            if relative_runtime or _is_runtime_module(node.module or ""):
                out.extend(f"{rel}:{node.lineno} import {alias.name}" for alias in node.names
                           if alias.name in privates)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) > 1:
            name = node.args[1]
            if isinstance(name, ast.Constant) and name.value in privates:
                out.append(f"{rel}:{node.lineno} {node.func.id}({name.value!r})")
    return out


def test_the_runtime_has_privates_to_protect() -> None:
    privates = runtime_privates()
    assert {"_open", "_inflight", "_fail"} <= privates, sorted(privates)


def test_no_module_outside_the_runtime_touches_a_runtime_private() -> None:
    privates = runtime_privates()
    runtime = set(_runtime_files())
    uses = [use for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
            if path not in runtime for use in private_uses(path, privates)]
    assert uses == []


def test_the_check_sees_a_reach_through(tmp_path: Path) -> None:
    sample = tmp_path / "reach_through.py"
    sample.write_text("from .runtime import _Batch\n\n\ndef pending(ctx):\n"
                      "    return ctx._open is not None or getattr(ctx, '_inflight')\n")
    uses = private_uses(sample, runtime_privates())
    assert sorted(use.split(" ", 1)[1] for use in uses) == [
        "._open", "getattr('_inflight')", "import _Batch"]
