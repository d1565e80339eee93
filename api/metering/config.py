"""Metering configuration (`config/metering.toml`) as typed objects, and the pure cost function."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

import msgspec

from api.params import SCALED_BY
from pipelines.catalog import MARKETS

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parents[2] / "config" / "metering.toml"


class MeteringConfigError(ValueError):
    """The metering configuration is invalid, or names an operation it does not price."""


class Limits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Rate and connection limits of every limited plan."""

    requests_per_window: int = 300
    window_seconds: int = 60
    concurrent: int = 10
    concurrent_exports: int = 2
    """Simultaneous in-flight requests of one key to a row-priced operation (bulk export), within
    `concurrent` (decisions.md, Bulk export)."""
    request_timeout_seconds: int = 120


class Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A plan's budget (None: no budget limit), whether rate limits apply, and its markets."""

    monthly_budget: int | None = None
    daily_cap: int | None = None
    limited: bool = True
    markets: tuple[str, ...] = MARKETS
    excluded_operations: tuple[str, ...] = ()
    """Operations the plan does not include: they answer 402 (decisions.md: no bulk export on
    sandbox)."""

    @property
    def unlimited_budget(self) -> bool:
        return self.monthly_budget is None or self.daily_cap is None

    @property
    def has_limits(self) -> bool:
        """Whether anything (rate, connections, budget) must be checked before the work."""
        return self.limited or not self.unlimited_budget


class ScaledCost(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A cost that scales with one integer parameter, after the route's default and clamp (the
    parameter, its default and its bounds: `api.params.SCALED_BY`, which the route reads too)."""

    steps: tuple[tuple[int, int], ...]
    otherwise: int
    by_points: bool = False

    def for_value(self, value: int | None) -> int:
        """Tokens for a parameter value already defaulted and clamped (None: `otherwise`)."""
        if value is None:
            return self.otherwise
        for bound, tokens in self.steps:
            if value <= bound:
                return tokens
        return self.otherwise

    @property
    def ceiling(self) -> int:
        return max([self.otherwise, *(tokens for _, tokens in self.steps)])


class RowsCost(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A cost counted from the rows a response returns (bulk export): one token per
    `rows_per_token` rows, rounded up, never below `minimum`.

    The minimum is charged up-front, with the limits; the route counts its rows before it answers
    and reports them (`api.metering.charge_rows`), which charges the rest before the body is sent.
    """

    rows_per_token: int
    minimum: int

    def for_rows(self, rows: int) -> int:
        return max(self.minimum, -(-rows // self.rows_per_token))

    def __post_init__(self) -> None:
        if self.rows_per_token < 1 or self.minimum < 1:
            raise MeteringConfigError("a row cost needs rows_per_token >= 1 and minimum >= 1")


Cost = int | ScaledCost | RowsCost


class MeteringConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Everything metering needs: plans, limits, costs per operation, the upgrade address."""

    plans: dict[str, Plan]
    costs: dict[str, int | ScaledCost]
    upgrade_url: str
    limits: Limits = msgspec.field(default_factory=Limits)
    row_costs: dict[str, RowsCost] = msgspec.field(default_factory=dict)
    """Operations priced by the rows they return: a table of their own, since msgspec decodes a
    union of two untagged tables (`ScaledCost`, `RowsCost`) ambiguously."""

    def plan(self, name: str) -> Plan:
        try:
            return self.plans[name]
        except KeyError:
            raise MeteringConfigError(f"unknown plan {name!r}") from None

    def __post_init__(self) -> None:
        unbound = sorted(
            op
            for op, rule in self.costs.items()
            if isinstance(rule, ScaledCost) and op not in SCALED_BY
        )
        if unbound:
            raise MeteringConfigError(
                f"scaled costs of operations with no bounded parameter: {unbound}"
            )
        twice = sorted(set(self.costs) & set(self.row_costs))
        if twice:
            raise MeteringConfigError(f"operations priced both in costs and row_costs: {twice}")
        unpriced = sorted(
            {op for plan in self.plans.values() for op in plan.excluded_operations}
            - {*self.costs, *self.row_costs}
        )
        if unpriced:
            raise MeteringConfigError(f"plans exclude operations that are not priced: {unpriced}")

    def is_export(self, operation: str) -> bool:
        """A row-priced operation (bulk export): its in-flight requests count toward
        `limits.concurrent_exports` too."""
        return operation in self.row_costs

    def cost_rule(self, operation: str) -> Cost:
        rule: Cost | None = self.costs.get(operation)
        if rule is None:
            rule = self.row_costs.get(operation)
        if rule is None:
            raise MeteringConfigError(f"no cost configured for operation {operation!r}")
        return rule


CONFIG_ENV = "MI_METERING_CONFIG"
"""The environment variable naming an operator's metering TOML file (else the default one)."""


def config_from_env(env: Mapping[str, str]) -> MeteringConfig:
    """The configuration the API and the CLI run with: `MI_METERING_CONFIG`, else the default."""
    path = env.get(CONFIG_ENV)
    return load_config(Path(path) if path else None)


def load_config(path: Path | None = None) -> MeteringConfig:
    """Read and validate the metering TOML file (default: `config/metering.toml`)."""
    with (path or DEFAULT_CONFIG_PATH).open("rb") as handle:
        try:
            raw = tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise MeteringConfigError(f"{path or DEFAULT_CONFIG_PATH}: {exc}") from exc
    try:
        return msgspec.convert(raw, MeteringConfig)
    except msgspec.ValidationError as exc:
        raise MeteringConfigError(str(exc)) from exc


def request_cost(config: MeteringConfig, operation: str, value: int | None = None) -> int:
    """Tokens charged up-front for one request of `operation` whose scaled parameter is served as
    `value` (after default and clamp, as the route reads it: `RequestValues.integer`; None: the
    rule's `otherwise`). A fixed cost ignores `value`; a cost by rows is its minimum."""
    rule = config.cost_rule(operation)
    if isinstance(rule, int):
        return rule
    if isinstance(rule, RowsCost):
        return rule.minimum
    return rule.for_value(value)


def points_cost(config: MeteringConfig, operation: str, points: int) -> int | None:
    """Final cost of a `by_points` operation that returned `points` points (None: not by points)."""
    rule = config.cost_rule(operation)
    if not isinstance(rule, ScaledCost) or not rule.by_points:
        return None
    return rule.for_value(points)


def cost_text(config: MeteringConfig, operation: str) -> str:
    """What one request of `operation` costs, in words, from the configuration (the MCP tools'
    and the OpenAPI document's descriptions: the numbers are never written anywhere else)."""
    rule = config.cost_rule(operation)
    if isinstance(rule, int):
        return f"{rule} token{'s' if rule != 1 else ''}"
    if isinstance(rule, RowsCost):
        return (
            f"1 token per {rule.rows_per_token:,} rows returned, rounded up, "
            f"at least {rule.minimum} tokens"
        )
    low = min(tokens for _, tokens in rule.steps)
    scale = ", ".join(f"<= {bound}: {tokens}" for bound, tokens in rule.steps)
    by = "the number of points returned" if rule.by_points else f"`{SCALED_BY[operation].name}`"
    return f"{low} to {rule.ceiling} tokens by {by} ({scale}, more: {rule.otherwise})"
