"""The `mi` command line: one entry point whose subcommands live in `mi/commands/`."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Market Intelligence: materialize the warehouse, query it, serve the API, manage keys."""


def _register() -> None:
    # Subcommand modules register themselves here; each owns one concern.
    from mi.commands import ALL

    for command in ALL:
        main.add_command(command)


_register()
