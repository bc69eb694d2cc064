"""Named, disjoint shards of a training set: the datasets a DepL job chooses among
(docs/worker-contract.md section 5), with the same layouts and label-noise semantics as the
reference worker.

A layout is a shard count (``"6"``: shard0..shard5 of equal size), the JSON text of a shards file,
or its path::

    {"noiseSeed": 7, "shards": [{"name": "clean-a", "samples": 20000},
                                {"name": "noisy-b", "samples": 20000, "labelNoise": 0.3}]}

Shards are consecutive rows from row 0. A shard with ``labelNoise`` q has exactly round(q * n) of
its labels replaced by a different class, chosen from the noise seed and the shard's name only,
so the same shard is the same dataset in every run and every selection. (The draw is numpy's,
not the C++ worker's: the same semantics, not the same labels.)
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace

from .errors import ConfigError

DEFAULT_NOISE_SEED = 20240101


@dataclass(frozen=True)
class ShardDefinition:
    name: str
    first: int  # first row
    count: int  # rows [first, first + count)
    label_noise: float = 0.0


@dataclass(frozen=True)
class ShardLayout:
    shards: tuple[ShardDefinition, ...]
    noise_seed: int = DEFAULT_NOISE_SEED
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(s.name for s in self.shards))

    def find(self, name: str) -> ShardDefinition:
        for shard in self.shards:
            if shard.name == name:
                return shard
        raise ConfigError(f"dataset '{name}' is not a shard (known: {', '.join(self.names)})")


def equal_shards(count: int, total: int, origin: str = "shards") -> ShardLayout:
    """`count` shards shard0.. of total // count rows each (the remainder goes to none)."""
    if count <= 0:
        raise ConfigError(f"{origin}: need a positive shard count, got {count}")
    if count > total:
        raise ConfigError(f"{origin}: {count} shards of {total} rows would be empty")
    size = total // count
    return ShardLayout(tuple(ShardDefinition(f"shard{i}", i * size, size) for i in range(count)))


def parse_shards_json(text: str, total: int, origin: str) -> ShardLayout:
    """A shards file's JSON; errors name `origin` and the field."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{origin}: not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("shards"), list):
        raise ConfigError(f'{origin}: want an object with a "shards" array')
    noise_seed = doc.get("noiseSeed", DEFAULT_NOISE_SEED)
    if isinstance(noise_seed, bool) or not isinstance(noise_seed, int) or noise_seed < 0:
        raise ConfigError(f"{origin}: noiseSeed must be a non-negative integer")
    shards, seen, first = [], set(), 0
    for i, item in enumerate(doc["shards"]):
        where = f"{origin}: shards[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: must be an object")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}.name: must be a non-empty string")
        if name in seen:
            raise ConfigError(f"{where}.name: shard name '{name}' appears twice")
        seen.add(name)
        samples = item.get("samples")
        if isinstance(samples, bool) or not isinstance(samples, int):
            raise ConfigError(f"{where}.samples: must be an integer")
        if not 1 <= samples <= total:
            raise ConfigError(f"{where}.samples: must be in [1, {total}], got {samples}")
        noise = item.get("labelNoise", 0.0)
        if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 0.0 <= noise <= 1.0:
            raise ConfigError(f"{where}.labelNoise: must be a number in [0, 1], got {noise!r}")
        if first + samples > total:
            raise ConfigError(f"{origin}: shard '{name}' ends at row {first + samples}, but the "
                              f"training set has {total} rows")
        shards.append(ShardDefinition(name, first, samples, float(noise)))
        first += samples
    if not shards:
        raise ConfigError(f'{origin}: "shards" is empty')
    return ShardLayout(tuple(shards), noise_seed)


def layout_from_spec(spec: str, total: int, origin: str = "shards") -> ShardLayout:
    """A shard count, inline shards JSON (starting with '{') or the path of a shards file."""
    stripped = spec.strip()
    if stripped.isdigit():
        return equal_shards(int(stripped), total, origin)
    if stripped.startswith("{"):
        return parse_shards_json(stripped, total, f"{origin} (inline JSON)")
    if not os.path.isfile(spec):
        raise ConfigError(f"{origin}: '{spec}' is neither a shard count, nor inline shards JSON, "
                          "nor a readable shards file")
    with open(spec, encoding="utf-8") as f:
        return parse_shards_json(f.read(), total, spec)


def apply_label_noise(layout: ShardLayout, spec: str, origin: str = "label noise") -> ShardLayout:
    """``"shard4=0.3,shard5=0.6"`` applied to a layout."""
    shards = list(layout.shards)
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"{origin} '{item}': want shard=fraction")
        name, value = name.strip(), value.strip()
        try:
            fraction = float(value)
        except ValueError:
            fraction = math.nan
        if not 0.0 <= fraction <= 1.0:
            raise ConfigError(f"{origin} for '{name}': want a fraction in [0, 1], got '{value}'")
        index = [s.name for s in shards].index(layout.find(name).name)
        shards[index] = replace(shards[index], label_noise=fraction)
    return ShardLayout(tuple(shards), layout.noise_seed)


def rows_needed(layout: ShardLayout, names: list[str]) -> int:
    """Rows of the training set the named shards need (a loader can stop reading there)."""
    return max((layout.find(n).first + layout.find(n).count for n in names), default=0)


def _fnv1a(text: str) -> int:
    h = 1469598103934665603
    for byte in text.encode():
        h = ((h ^ byte) * 1099511628211) % (1 << 64)
    return h


def select(layout: ShardLayout, names: list[str], labels, classes: int):
    """Rows and the labels to train on for the union of the named shards, in the order given.

    `labels` holds the true labels of (at least) the rows the shards need; returns two numpy
    arrays (rows, labels), the labels of noisy shards corrupted as the layout says.
    """
    import numpy as np

    if not names:
        raise ConfigError("datasets: no shard selected")
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise ConfigError(f"datasets: '{twice}' is listed twice")
    need = rows_needed(layout, names)
    if need > len(labels):
        raise ConfigError(f"datasets: the shards need {need} training rows, {len(labels)} are loaded")
    rows, out = [], []
    for name in names:
        shard = layout.find(name)
        shard_rows = np.arange(shard.first, shard.first + shard.count)
        shard_labels = np.asarray(labels[shard.first:shard.first + shard.count]).astype(np.int64)
        noisy = int(math.floor(shard.label_noise * shard.count + 0.5))
        if noisy and classes >= 2:
            h = _fnv1a(shard.name)
            mask = (1 << 32) - 1
            rng = np.random.Generator(np.random.PCG64(
                [layout.noise_seed & mask, layout.noise_seed >> 32, h & mask, h >> 32]))
            positions = rng.choice(shard.count, size=noisy, replace=False)
            shifts = rng.integers(1, classes, size=noisy)
            shard_labels[positions] = (shard_labels[positions] + shifts) % classes
        rows.append(shard_rows)
        out.append(shard_labels)
    return np.concatenate(rows), np.concatenate(out)
