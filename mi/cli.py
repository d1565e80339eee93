"""The `mi` command line: one entry point whose subcommands live in `mi/commands/`."""

from __future__ import annotations

import importlib

import click

from mi.commands import COMMANDS


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand runs (or help lists it).

    `mi materialize` then never imports the API's web stack, and a pipeline worker process, which
    runs this module again before its work, starts in milliseconds.
    """

    def __init__(self, *args: object, lazy: dict[str, str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = lazy
        """Subcommand name -> `module:attribute` of its click command."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.lazy.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
def main() -> None:
    """Market Intelligence: materialize the warehouse, query it, serve the API, manage keys."""
