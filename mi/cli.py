"""The `mi` command line: one entry point whose subcommands live in `mi/commands/`."""

from __future__ import annotations

import atexit
import faulthandler
import importlib
import os
import sys

import click

from api.heap import collection_paused
from mi.commands import COMMANDS
from mi.errors import Failure, Refusal
from pipelines.platform.config_files import ConfigurationError


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
        with collection_paused():  # the command's imports: long-lived, nothing to collect
            command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    def invoke(self, ctx: click.Context) -> object:
        """The subcommand, its refusals as one line each: click's usage errors without the usage
        block, a command's own errors and a bad configuration (an `MI_*` variable, a file) with
        exit status 2."""
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            where = error.ctx.command_path if error.ctx else "mi"
            raise Refusal(f"{error.format_message()} (see '{where} --help')") from None
        except (Refusal, Failure):
            raise
        except click.ClickException as error:
            raise Refusal(error.format_message()) from None
        except ConfigurationError as error:
            raise Refusal(str(error)) from None


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
def main() -> None:
    """Market Intelligence: materialize the warehouse, query it, serve the API, manage keys."""


def run() -> None:
    """The `mi` executable: the command, then an exit that does not tear the interpreter down.

    After a pipeline run, freeing every object of Dagster, Polars and the warehouse one by one
    takes half a second to a second, and nothing needs it: by then the command has closed the
    instance, its files and connections. The exit handlers still run and the streams are flushed.
    Tests call `main` (through click's runner), never this.

    A native crash (a segmentation fault in a compiled library) prints every thread's Python
    stack to stderr before the process dies, so the step and the line it was in are in the log.
    """
    faulthandler.enable()
    try:
        main.main(prog_name="mi")
    except SystemExit as done:
        code = done.code
    else:  # pragma: no cover (click's standalone mode always exits)
        code = 0
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # what `sys.exit("message")` prints
    atexit._run_exitfuncs()  # logging's flush, multiprocessing's worker shutdown, ...
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))
