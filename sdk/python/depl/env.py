"""Reading settings from the environment: every error names the variable and what is wrong."""

from __future__ import annotations

import json
import math
from typing import Mapping

from .errors import ConfigError

MAX_EPOCHS = 1 << 20


def text(env: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    """The variable's value, or ``default`` when it is unset or empty."""
    value = env.get(name)
    return value if value else default


def required(env: Mapping[str, str], name: str, what: str) -> str:
    """The variable's value; unset or empty is an error that says what the operator sets there."""
    value = env.get(name)
    if not value:
        raise ConfigError(f"{name} is not set; the operator sets it to {what}")
    return value


def parse_integer(name: str, value: str, minimum: int, maximum: int) -> int:
    """``value`` as an integer in [minimum, maximum]; the error names ``name``."""
    stripped = value.strip()
    try:
        number = int(stripped, 10) if stripped and stripped.lstrip("-").isdigit() else None
    except ValueError:
        number = None
    if number is None or not minimum <= number <= maximum:
        raise ConfigError(f"{name}: want an integer in [{minimum}, {maximum}], got '{value}'")
    return number


def parse_number(name: str, value: str, minimum: float, maximum: float = math.inf) -> float:
    """``value`` as a finite number in [minimum, maximum]; the error names ``name``."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and minimum <= number <= maximum):
        bound = f"[{minimum:g}, {maximum:g}]" if math.isfinite(maximum) else f">= {minimum:g}"
        raise ConfigError(f"{name}: want a number {bound}, got '{value}'")
    return number


def integer(env: Mapping[str, str], name: str, default: int, minimum: int, maximum: int) -> int:
    """An optional integer variable (``default`` when unset or empty)."""
    value = env.get(name)
    return default if not value else parse_integer(name, value, minimum, maximum)


def number(env: Mapping[str, str], name: str, default: float, minimum: float,
           maximum: float = math.inf) -> float:
    """An optional number variable (``default`` when unset or empty)."""
    value = env.get(name)
    return default if not value else parse_number(name, value, minimum, maximum)


def json_object(env: Mapping[str, str], name: str, what: str) -> dict | None:
    """An optional variable holding a JSON object."""
    value = env.get(name)
    if not value:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{name}: not valid JSON ({e.msg} at character {e.pos}); want {what}") from None
    if not isinstance(parsed, dict):
        raise ConfigError(f"{name}: want a JSON object ({what}), got {type(parsed).__name__}")
    return parsed


def names(value: str) -> list[str]:
    """``"a, b,,c"`` as ``["a", "b", "c"]``."""
    return [item.strip() for item in value.split(",") if item.strip()]
