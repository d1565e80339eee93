"""Every package a production module imports is declared in pyproject.toml's dependencies (not
merely installed because something else depends on it)."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib

from tests.test_walls import PRODUCTION, ROOT, imported_modules, modules_of

FIRST_PARTY = {"api", "pipelines", "mi", "analysis"}
WORKSPACE = {"market_intelligence": "market-intelligence-client"}
"""Packages of the workspace's own members (editable installs name no top-level packages)."""
NOT_LOCKED = {
    "dagster_k8s": "the Kubernetes executor, installed by who deploys it (docs/deployment.md)"
}
"""Imports the project deliberately leaves out of its lock, each with why."""


def declared_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = (re.split(r"[\s<>=!~\[;]", spec, maxsplit=1)[0] for spec in project["dependencies"])
    return {_normal(name) for name in names}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def third_party_imports() -> dict[str, str]:
    """Top-level name -> a module importing it, for every import outside stdlib and first party."""
    found: dict[str, str] = {}
    for part in PRODUCTION:
        for path in modules_of(part):
            for module in imported_modules(path):
                top = module.split(".")[0]
                if top in FIRST_PARTY or top in sys.stdlib_module_names or top == "__future__":
                    continue
                found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared() -> None:
    providers = {
        **importlib.metadata.packages_distributions(),
        **{top: [dist] for top, dist in WORKSPACE.items()},
    }
    declared = declared_distributions()
    undeclared = {
        top: where
        for top, where in third_party_imports().items()
        if top not in NOT_LOCKED and not {_normal(d) for d in providers.get(top, [])} & declared
    }
    assert undeclared == {}


def test_the_check_sees_third_party_imports() -> None:
    """A check that finds no import would hold vacuously."""
    assert {"polars", "litestar", "dagster", "click"} <= set(third_party_imports())
