"""The operator's TOML files, read one way: parsed, then decoded with msgspec into typed Structs
(as the API's metering configuration is), so an unknown key, a missing one or a wrong type is an
error naming the file and where in it."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import msgspec


class ConfigurationError(ValueError):
    """The operator's configuration (a file, an `MI_*` variable) is not what it must be: a
    command answers it with one line naming the setting, never a traceback."""


class ConfigFileError(ConfigurationError):
    """A configuration file that cannot be read, or whose contents are not what it must hold."""


def read_toml(path: Path, error: type[ConfigFileError] = ConfigFileError) -> dict[str, Any]:
    """The parsed file (`error`, a domain's own ConfigFileError, naming the file when it cannot
    be read or is not TOML)."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as failure:
        raise error(f"{path}: {failure}") from failure
    except OSError as failure:
        raise error(f"{path}: cannot be read ({failure.strerror or failure})") from None


def decode(
    raw: object, into: Any, where: str, error: type[ConfigFileError] = ConfigFileError
) -> Any:
    """`raw` (a parsed table) as `into` (a Struct, or a union of tagged Structs); `error` naming
    `where` and the offending key."""
    try:
        return msgspec.convert(raw, into)
    except msgspec.ValidationError as failure:
        raise error(f"{where}: {failure}") from None
