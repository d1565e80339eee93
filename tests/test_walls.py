"""The walls between the codebase's parts, read from every production module's imports.

- `api/` takes nothing from the pipeline but the catalog (`pipelines.catalog`);
- the pipeline knows no HTTP: nothing under `pipelines/` imports `api`;
- the catalog imports neither `api` nor the rest of the pipeline;
- `analysis` (charts) reads the warehouse without the API or the command line, and neither the
  pipeline nor the API imports it;
- no production module (`api`, `pipelines`, `mi`, `analysis`) imports `benchmarks` or `tests`;
- no production module imports a private module of a dependency (`dagster._core`: any module of
  an installed package with a part that starts with an underscore): those change without notice
  between releases. The standard library is outside this wall (`re._parser` serves the news
  grammar's literal gate, `pipelines/newsroom/caseless.py`);
- no import circle inside `api`, `mi` or `analysis` (a module that needs both ends of one lives
  apart: `api/metering/backends.py`);
- the pipeline's folders are layers (`PIPELINE_LAYERS`, docs/architecture.md): a folder imports
  only the folders below it, and its root holds nothing but `definitions.py`, which assembles them.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION = ("api", "pipelines", "mi", "analysis")


def imported_modules(path: Path) -> Iterator[str]:
    """Every module `path` imports, absolute (relative imports resolved against its package)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                yield ".".join([*base, *([node.module] if node.module else [])])
            elif node.module:
                yield node.module


def modules_of(part: str) -> list[Path]:
    return sorted((ROOT / part).rglob("*.py"))


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def offences(part: str, refused: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    """`file: module` for every import under `part` of a refused package not in `allowed`."""
    found = []
    for path in modules_of(part):
        for module in imported_modules(path):
            if any(within(module, r) for r in refused) and not any(
                within(module, a) for a in allowed
            ):
                found.append(f"{path.relative_to(ROOT)}: {module}")
    return found


def test_the_api_takes_nothing_from_the_pipeline_but_the_catalog() -> None:
    assert offences("api", ("pipelines",), allowed=("pipelines.catalog",)) == []


def test_the_pipeline_knows_no_http() -> None:
    assert offences("pipelines", ("api",)) == []


def test_the_catalog_imports_neither_the_api_nor_the_rest_of_the_pipeline() -> None:
    assert offences("pipelines/catalog", ("api", "pipelines"), allowed=("pipelines.catalog",)) == []


def test_analysis_takes_neither_the_api_nor_the_command_line() -> None:
    assert offences("analysis", ("api", "mi")) == []


@pytest.mark.parametrize("part", ["api", "pipelines"])
def test_neither_the_pipeline_nor_the_api_imports_analysis(part: str) -> None:
    assert offences(part, ("analysis",)) == []


@pytest.mark.parametrize("part", PRODUCTION)
def test_no_production_module_imports_benchmarks_or_tests(part: str) -> None:
    assert offences(part, ("benchmarks", "tests")) == []


def private_imports(part: str) -> list[str]:
    """`file: module` for every import under `part` of a private module of another package."""
    own = part.split("/")[0]
    return [
        f"{path.relative_to(ROOT)}: {module}"
        for path in modules_of(part)
        for module in imported_modules(path)
        if not within(module, own) and is_private_dependency(module)
    ]


def is_private_dependency(module: str) -> bool:
    """A module of an installed package (not the standard library) that is not public: one of its
    dotted names starts with an underscore."""
    names = module.split(".")
    return names[0] not in sys.stdlib_module_names and any(
        name.startswith("_") and not name.startswith("__") for name in names
    )


@pytest.mark.parametrize("part", PRODUCTION)
def test_no_production_module_imports_a_private_module_of_a_dependency(part: str) -> None:
    assert private_imports(part) == []


@pytest.mark.parametrize(
    ("module", "private"),
    [
        ("dagster._core.events", True),
        ("dagster_celery._private", True),
        ("dagster", False),
        ("polars.testing", False),
        ("re._parser", False),
        ("__future__", False),
    ],
)
def test_the_private_import_wall_tells_dependencies_internals(module: str, private: bool) -> None:
    """The wall is not vacuous: Dagster's internals are refused, public modules and the standard
    library pass."""
    assert is_private_dependency(module) is private


PIPELINE_LAYERS = (
    "catalog",
    "platform",
    "warehouse",
    "incremental",
    "embedded_market",
    "prices",
    "instruments",
    "corporate_actions",
    "news",
    "indicators",
    "trends",
    "simulator",
    "newsroom",
    "webhooks",
    "jobs",
)
"""The pipeline's folders from the bottom up: the catalog and the platform know no domain, the
warehouse and the incremental runner no domain's tables, a domain only those below it, and the jobs
every domain's assets."""


def folder_of(module: str) -> str | None:
    """The folder of `pipelines` a module lives in (None outside the pipeline or at its root)."""
    names = module.split(".")
    inside = names[0] == "pipelines" and len(names) > 1
    return names[1] if inside and (ROOT / "pipelines" / names[1]).is_dir() else None


def folder_imports() -> dict[tuple[str, str], list[str]]:
    """(importing folder, imported folder) -> the files, for every import between two folders."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in modules_of("pipelines"):
        source = folder_of(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for module in imported_modules(path):
            target = folder_of(module)
            if source and target and source != target:
                found.setdefault((source, target), []).append(str(path.relative_to(ROOT)))
    return found


def test_every_pipeline_folder_is_a_layer() -> None:
    folders = {p.name for p in (ROOT / "pipelines").iterdir() if (p / "__init__.py").exists()}
    assert folders == set(PIPELINE_LAYERS)


def test_the_pipeline_root_holds_only_the_assembly() -> None:
    assert {p.name for p in (ROOT / "pipelines").glob("*.py")} == {"__init__.py", "definitions.py"}


def test_no_pipeline_folder_imports_one_above_it() -> None:
    rank = {folder: i for i, folder in enumerate(PIPELINE_LAYERS)}
    climbs = [
        f"{source} -> {target} ({', '.join(sorted(set(files)))})"
        for (source, target), files in sorted(folder_imports().items())
        if rank[target] > rank[source]
    ]
    assert climbs == []


def test_the_layer_wall_sees_imports_between_folders() -> None:
    """The layers are read from real imports (a wall that reads nothing holds vacuously)."""
    edges = folder_imports()
    assert ("trends", "indicators") in edges  # from pipelines.indicators.frames import ...
    assert ("simulator", "indicators") in edges  # from pipelines.indicators import recursive
    assert ("warehouse", "catalog") in edges


def test_the_walls_see_imports() -> None:
    """The reader finds absolute and relative imports (a wall test that reads nothing holds
    vacuously)."""
    found = set(imported_modules(ROOT / "api" / "metering" / "middleware.py"))
    assert {"api.auth", "api.errors", "pipelines.catalog"} <= found


def circles(part: str) -> list[list[str]]:
    """The import circles among `part`'s modules (strongly connected components of more than one
    module; imports inside functions count: they close a circle as surely at run time)."""
    paths = {_module_name(p): p for p in modules_of(part)}
    graph = {m: {i for i in imported_modules(p) if i in paths and i != m} for m, p in paths.items()}
    return [c for c in _components(graph) if len(c) > 1]


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit to meet)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        component.append(member)
                        if member == node:
                            break
                    found.append(sorted(component))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in stack:
                low[node] = min(low[node], index[step])
    return found


@pytest.mark.parametrize("part", ["api", "pipelines", "mi", "analysis"])
def test_no_import_circle_inside_a_part(part: str) -> None:
    assert circles(part) == []


def test_the_circle_reader_finds_a_circle() -> None:
    """A circle of two modules, one through a third, and a module that only imports: the reader
    names the circles alone (a circle test that finds nothing must be able to find one)."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"c"}}
    assert sorted(c for c in _components(graph) if len(c) > 1) == [["a", "b"], ["d", "e"]]
