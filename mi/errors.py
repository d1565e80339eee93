"""How `mi` ends when it cannot do what it was asked: a refusal (exit 2) or a failure (exit 1)."""

from __future__ import annotations

import click


class Refusal(click.ClickException):
    """Bad input or bad configuration: one line on stderr (`Error: ...`), exit status 2.

    Every command's usage errors and its own `click.ClickException`s are refusals (`mi.cli`
    turns them into this), as is a `ConfigurationError` (an `MI_*` variable, a file)."""

    exit_code = 2


class Failure(click.ClickException):
    """The work failed, not the call (a lock held too long, a service down): one line, exit 1,
    so that a script can tell "fix the call or the settings" from "try again"."""

    exit_code = 1
