"""What a contributor and a customer find at the root: the licence, and the hooks that run the
checks CI runs."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_project_and_the_sdk_customers_install_are_apache_2_licensed() -> None:
    for package in (ROOT, ROOT / "clients" / "python"):
        text = (package / "LICENSE").read_text()
        assert text.lstrip().startswith("Apache License")
        assert "Version 2.0, January 2004" in text
        project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
        assert project["license"] == "Apache-2.0"
        assert project["license-files"] == ["LICENSE"]


def test_the_commit_hooks_run_ruff_and_mypy_from_the_locked_venv() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    entries = {hook["id"]: hook["entry"] for hook in hooks}
    assert entries == {
        "ruff-check": ".venv/bin/ruff check --force-exclude",
        "ruff-format": ".venv/bin/ruff format --check --force-exclude",
        "mypy": ".venv/bin/mypy",
    }
    assert {hook["language"] for hook in hooks} == {"system"}  # nothing fetched at commit time
    validated = subprocess.run(
        [ROOT / ".venv" / "bin" / "pre-commit", "validate-config", ".pre-commit-config.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr
