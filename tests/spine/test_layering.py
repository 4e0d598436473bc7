"""Imports point one way: protocol <- storage / coordinator <- broker, and no import circles.

Inside broker/, the serving broker (the root modules, handlers/, services/, admin/, cluster/)
never imports the command-line tools (broker/cli/) or the test harness (broker/testing/): those
drive a broker from outside, and neither imports the other.

Every import statement of every project module counts, including ``TYPE_CHECKING`` blocks and
imports inside functions: a circle hidden in a function is still a circle. So do the imports by
name made at run time: the registry imports each handler module of its route table when its API
is first requested, the group service imports the coordinators when they start.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "storage", "coordinator", "broker", "pipeline")

# What each top-level package may import from the project besides itself.
ALLOWED = {
    "protocol": set(),
    "storage": {"protocol"},
    "coordinator": {"protocol"},
    "pipeline": {"protocol"},
    "broker": {"protocol", "storage", "coordinator", "pipeline"},
}
# Inside coordinator/: every coordinator runs on the runtime, which knows none of them; the
# group and transaction coordinators (and a share-state coordinator beside them) never import
# each other.
FORBIDDEN_INSIDE_COORDINATOR = {
    "coordinator.runtime": ("coordinator.group", "coordinator.transaction"),
    "coordinator.transaction": ("coordinator.group",),
    "coordinator.group": ("coordinator.transaction",),
}
# Inside broker/: handlers and services never reach back up to the server or the connection.
FORBIDDEN_INSIDE_BROKER = {
    "broker.handlers": ("broker.server", "broker.connection", "broker.cli", "broker.testing"),
    "broker.services": ("broker.handlers", "broker.context", "broker.registry",
                        "broker.connection", "broker.server", "broker.responses", "broker.cli",
                        "broker.testing"),
}

# Packages of broker/ that drive a broker from outside; the serving broker imports neither, and
# neither imports the other.
OUTSIDE_THE_SERVING_BROKER = ("broker.cli", "broker.testing")
# ``python -m kafkette.broker`` is the command line: its module belongs to broker/cli/.
RUNS_AS = {"broker.__main__": "broker.cli"}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _modules() -> dict[str, Path]:
    """Dotted name (without the ``kafkette.`` prefix) -> file, for every project module."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom | ast.Import,
             known: dict[str, Path]) -> set[str]:
    targets: set[str] = set()

    def add(name: str) -> None:
        if name.startswith("kafkette."):
            name = name[len("kafkette."):]
        if name in known:
            targets.add(name)

    if isinstance(node, ast.Import):
        for alias in node.names:
            add(alias.name)
        return targets
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    for alias in node.names:
        full = f"{prefix}.{alias.name}".removeprefix("kafkette.")
        if full in known:  # ``from package import submodule``
            targets.add(full)
        else:
            add(prefix)
    return targets


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _resolve(module, is_package, node, known)
        edges.discard(module)
        graph[module] = edges
    for module, names in _imports_by_name().items():
        graph[module] |= {name.removeprefix("kafkette.") for name in names}
    return graph


def _imports_by_name() -> dict[str, tuple[str, ...]]:
    """Modules imported with importlib (lazily), by the module that imports them."""
    from kafkette.broker import routes
    from kafkette.broker.services import groups

    return {"broker.registry": tuple({entry[3] for entry in routes.TABLE.values()}),
            "broker.services.groups": groups._COORDINATOR_MODULES + groups._TRANSACTION_MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_imports_it_must() -> None:
    graph = import_graph()
    # Sanity: relative, absolute, TYPE_CHECKING-only and function-level imports are all seen.
    assert "broker.services" in graph["broker.server"]
    assert "protocol.records" in graph["storage.log"]
    assert "broker.registry" in graph["broker.connection"]
    assert {"broker.handlers.metadata", "broker.api_versions"} <= graph["broker.registry"]  # by name
    assert "coordinator.group.group_service" in graph["broker.services.groups"]
    assert "pipeline.cli" in graph["broker.cli.main"]  # imported inside a function
    assert "broker.server" in graph["broker.cli.main"]  # the CLI starts the serving broker
    assert "broker.cluster.faults" in graph["broker.connection"]


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_packages_import_only_downwards() -> None:
    wrong = []
    for module, targets in import_graph().items():
        top = module.split(".")[0]
        for target in targets:
            target_top = target.split(".")[0]
            if target_top != top and target_top not in ALLOWED[top]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_handlers_and_services_never_import_upwards() -> None:
    wrong = []
    for module, targets in import_graph().items():
        for prefix, forbidden in FORBIDDEN_INSIDE_BROKER.items():
            if module == prefix or module.startswith(prefix + "."):
                wrong += [f"{module} -> {t}" for t in targets
                          if any(t == f or t.startswith(f + ".") for f in forbidden)]
    assert wrong == []


def reaching_out(graph: dict[str, set[str]]) -> list[str]:
    """Imports that break the split of broker/ by job: from the serving broker into the tools or
    the test harness, or between those two."""
    wrong = []
    for module, targets in graph.items():
        if not _within(module, "broker"):
            continue
        home = RUNS_AS.get(module) or next(
            (p for p in OUTSIDE_THE_SERVING_BROKER if _within(module, p)), None)
        for target in sorted(targets):
            outside = next((p for p in OUTSIDE_THE_SERVING_BROKER if _within(target, p)), None)
            if outside is not None and outside != home:
                wrong.append(f"{module} -> {target}")
    return wrong


def test_split_checker_finds_an_import_across_the_split() -> None:
    graph = {"broker.server": {"broker.cli.wire_client"}, "broker.cli.main": {"broker.server"},
             "broker.testing": {"broker.testing.runners", "broker.cli.main"},
             "broker.testing.runners": {"broker.server", "broker.cluster.faults"},
             "broker.cli.wire_client": set(), "broker.__main__": {"broker.cli.main"}}
    assert reaching_out(graph) == ["broker.server -> broker.cli.wire_client",
                                   "broker.testing -> broker.cli.main"]


def test_the_serving_broker_never_imports_the_tools_or_the_test_harness() -> None:
    assert reaching_out(import_graph()) == []


def test_coordinator_imports_nothing_from_broker() -> None:
    graph = import_graph()
    assert [f"{m} -> {t}" for m, targets in graph.items() if _within(m, "coordinator")
            for t in sorted(targets) if _within(t, "broker")] == []


def test_coordinators_stand_on_the_runtime_and_not_on_each_other() -> None:
    wrong = []
    for module, targets in import_graph().items():
        for prefix, forbidden in FORBIDDEN_INSIDE_COORDINATOR.items():
            if module == prefix or module.startswith(prefix + "."):
                wrong += [f"{module} -> {t}" for t in targets
                          if any(t == f or t.startswith(f + ".") for f in forbidden)]
    assert wrong == []


def test_the_connection_imports_nothing_from_the_coordinator() -> None:
    """The connection frames and orders requests; what it may do with an API's requests is
    declared by the route (broker/routes.py), and the coordinator is reached through services."""
    graph = import_graph()
    assert sorted(t for t in graph["broker.connection"] if t.split(".")[0] == "coordinator") == []
