"""The `mi` executable: lazy subcommands, exit codes and complete output through its fast exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MI = Path(sys.executable).with_name("mi")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MI), *args], capture_output=True, text=True, timeout=60, check=False)


def test_the_command_line_imports_no_subcommand_until_one_runs() -> None:
    probe = "import sys, mi.cli; print(sorted(m for m in ('dagster', 'litestar', 'polars') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_lists_every_subcommand_and_exits_0() -> None:
    done = run("--help")
    assert done.returncode == 0
    for name in ("chart", "keys", "materialize", "serve", "sql", "webhooks"):
        assert f"  {name}" in done.stdout


def test_output_written_to_a_pipe_is_complete_before_the_fast_exit() -> None:
    done = run("materialize", "--help")
    assert done.returncode == 0
    assert done.stdout.rstrip().endswith("Show this message and exit.")


def test_a_usage_error_exits_2_with_its_message() -> None:
    done = run("materialize", "--market", "bogus")
    assert done.returncode == 2
    assert "unknown markets ['bogus']" in done.stderr
