"""Subcommands of `mi`, one module per concern; `COMMANDS` is what `mi.cli` offers, imported lazily."""

COMMANDS: dict[str, str] = {
    "materialize": "mi.commands.pipeline:materialize",
    "serve": "mi.commands.serve:serve",
    "sql": "mi.commands.warehouse:sql",
    "keys": "mi.commands.keys:keys",
    "webhooks": "mi.commands.webhooks:webhooks",
    "workers": "mi.commands.workers:workers",
    "mcp": "mi.commands.mcp_server:mcp",
    "chart": "mi.commands.chart:chart_command",
}
"""Subcommand name -> `module:attribute` of its click command."""
