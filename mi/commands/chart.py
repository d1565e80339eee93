"""`mi chart`: a symbol's price, Bollinger bands, moving averages, trends and trades, as PNG or SVG."""

from __future__ import annotations

from pathlib import Path

import click

from analysis.charts import DEFAULT_DAYS, UnknownSymbolError, chart
from analysis.warehouse import NotMaterializedError
from pipelines.catalog import MARKETS, STRATEGIES

FORMATS = (".png", ".svg")


@click.command(name="chart")
@click.argument("symbol")
@click.option("--market", type=click.Choice(MARKETS), default="crypto", show_default=True)
@click.option(
    "--period",
    type=click.IntRange(min=2),
    default=DEFAULT_DAYS,
    show_default=True,
    help="Calendar days shown, up to the latest bar.",
)
@click.option("--strategy", type=click.Choice(STRATEGIES), default="aggressive", show_default=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The file to write, .png or .svg  [default: <SYMBOL>-<market>.png]",
)
def chart_command(symbol: str, market: str, period: int, strategy: str, out: Path | None) -> None:
    """Draw SYMBOL's chart from the warehouse: close with Bollinger(20, 2) bands and the 50- and
    200-day averages, trend segments shaded by direction, the strategy's trades marked.

    Example: mi chart BTC --period 180 --out btc.svg
    """
    target = out or Path(f"{symbol.upper()}-{market}.png")
    if target.suffix.lower() not in FORMATS:
        raise click.UsageError(f"--out must end in {' or '.join(FORMATS)}, not {target.name!r}")
    try:
        figure = chart(symbol, market, period, strategy)
    except (UnknownSymbolError, NotMaterializedError) as error:
        raise click.ClickException(str(error)) from error
    figure.savefig(target, dpi=120)
    click.echo(str(target))
