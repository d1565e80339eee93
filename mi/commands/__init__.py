"""Subcommands of `mi`, one module per concern; `ALL` is what `mi.cli` registers."""

from __future__ import annotations

import click

ALL: list[click.Command] = []
