"""The walls between the codebase's parts, read from every production module's imports.

- `api/` takes nothing from the pipeline but the catalog (`pipelines.catalog`);
- the pipeline knows no HTTP: nothing under `pipelines/` imports `api`;
- the catalog imports neither `api` nor the rest of the pipeline;
- `analysis` (charts) reads the warehouse without the API or the command line, and neither the
  pipeline nor the API imports it;
- no production module (`api`, `pipelines`, `mi`, `analysis`) imports `benchmarks` or `tests`.
"""

from __future__ import annotations

import ast
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


def test_the_walls_see_imports() -> None:
    """The reader finds absolute and relative imports (a wall test that reads nothing holds
    vacuously)."""
    found = set(imported_modules(ROOT / "api" / "metering" / "middleware.py"))
    assert {"api.auth", "api.errors", "pipelines.catalog"} <= found
