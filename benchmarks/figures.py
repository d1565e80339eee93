"""One benchmark figure (project vs anchor, a goal) and the table and JSON they are reported as."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GOAL_TESTS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "<": operator.lt,
    ">": operator.gt,
}


@dataclass(frozen=True)
class Goal:
    """`on` ("ratio" or "project") compared with `bound` by `op`, e.g. ratio >= 0.70."""

    on: str
    op: str
    bound: float

    def __str__(self) -> str:
        return f"{self.on} {self.op} {self.bound:g}"

    def met(self, project: float | None, ratio: float | None) -> bool | None:
        value = ratio if self.on == "ratio" else project
        return None if value is None else GOAL_TESTS[self.op](value, self.bound)


@dataclass(frozen=True)
class Figure:
    """One row: the project's value, the anchor's (same run, same machine) and their ratio."""

    section: str
    name: str
    unit: str
    project: float | None
    anchor: float | None = None
    anchor_name: str = ""
    goal: Goal | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.project is None or not self.anchor:
            return None
        return self.project / self.anchor

    @property
    def passed(self) -> bool | None:
        return None if self.goal is None else self.goal.met(self.project, self.ratio)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["goal"] = None if self.goal is None else str(self.goal)
        return {**data, "ratio": self.ratio, "pass": self.passed}


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"


def _mark(passed: bool | None) -> str:
    return {True: "yes", False: "NO", None: "-"}[passed]


def table(figures: Sequence[Figure]) -> str:
    """A plain-text table: figure | project | anchor | ratio | goal | pass."""
    header = ("figure", "project", "anchor", "ratio", "goal", "pass")
    rows = [
        (
            f"{f.section}: {f.name} ({f.unit})",
            _number(f.project),
            f"{_number(f.anchor)}" + (f" {f.anchor_name}" if f.anchor_name else ""),
            "-" if f.ratio is None else f"{f.ratio:.2f}",
            "-" if f.goal is None else str(f.goal),
            _mark(f.passed),
        )
        for f in figures
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [header]]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def markdown(figures: Sequence[Figure]) -> str:
    """The same table in Markdown, for docs/benchmarks.md."""
    lines = ["| figure | project | anchor | ratio | goal | pass |", "|---|---|---|---|---|---|"]
    for f in figures:
        anchor = _number(f.anchor) + (f" ({f.anchor_name})" if f.anchor_name else "")
        ratio = "-" if f.ratio is None else f"{f.ratio:.2f}"
        goal = "-" if f.goal is None else str(f.goal)
        lines.append(
            f"| {f.section}: {f.name} ({f.unit}) | {_number(f.project)} | {anchor} | {ratio} "
            f"| {goal} | {_mark(f.passed)} |"
        )
    return "\n".join(lines)


def write_json(path: Path, figures: Sequence[Figure], run: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"run": run, "figures": [f.as_json() for f in figures]}
    path.write_text(json.dumps(payload, indent=2) + "\n")


def read_json(path: Path) -> tuple[list[Figure], dict[str, Any]]:
    """The figures and run information of a written run (for `--markdown`)."""
    payload = json.loads(path.read_text())
    figures = []
    for row in payload["figures"]:
        goal = None
        if row["goal"]:
            on, op, bound = row["goal"].split()
            goal = Goal(on, op, float(bound))
        fields = ("section", "name", "unit", "project", "anchor", "anchor_name", "details")
        figures.append(Figure(**{name: row[name] for name in fields}, goal=goal))
    return figures, payload["run"]
