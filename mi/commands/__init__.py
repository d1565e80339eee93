"""Subcommands of `mi`, one module per concern; `ALL` is what `mi.cli` registers."""

from __future__ import annotations

import click

from mi.commands.keys import keys
from mi.commands.pipeline import materialize
from mi.commands.serve import serve
from mi.commands.warehouse import sql
from mi.commands.webhooks import webhooks

ALL: list[click.Command] = [materialize, serve, sql, keys, webhooks]
