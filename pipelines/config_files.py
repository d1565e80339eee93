"""The operator's TOML files, read one way: parsed, then decoded with msgspec into typed Structs
(as the API's metering configuration is), so an unknown key, a missing one or a wrong type is an
error naming the file and where in it."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


class ConfigFileError(ValueError):
    """A configuration file that cannot be read, or whose contents are not what it must hold."""


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed file (ConfigFileError naming the file when it is not TOML)."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ConfigFileError(f"{path}: {error}") from error


def decode(raw: object, into: type[T], where: str) -> T:
    """`raw` (a parsed table) as `into`; ConfigFileError naming `where` and the offending key."""
    try:
        return msgspec.convert(raw, into)
    except msgspec.ValidationError as error:
        raise ConfigFileError(f"{where}: {error}") from None
