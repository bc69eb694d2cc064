"""Shard layouts and label noise: the reference worker's semantics (docs/worker-contract.md
section 5)."""

import json

import numpy as np
import pytest

from depl.errors import ConfigError
from depl.shards import apply_label_noise, layout_from_spec, rows_needed, select


def test_a_count_makes_equal_consecutive_shards():
    layout = layout_from_spec("6", 60000)
    assert layout.names == tuple(f"shard{i}" for i in range(6))
    assert (layout.find("shard2").first, layout.find("shard2").count) == (20000, 10000)


def test_inline_json_and_files(tmp_path):
    text = '{"noiseSeed": 7, "shards": [{"name": "a", "samples": 30}, {"name": "b", "samples": 20, "labelNoise": 0.5}]}'
    inline = layout_from_spec(text, 100)
    path = tmp_path / "shards.json"
    path.write_text(text)
    assert layout_from_spec(str(path), 100) == inline
    assert inline.noise_seed == 7 and inline.find("b").first == 30 and inline.find("b").label_noise == 0.5


@pytest.mark.parametrize("spec,message", [
    ("0", "need a positive shard count"),
    ("7", "7 shards of 5 rows would be empty"),
    ("{", "not valid JSON"),
    ('{"shards": []}', '"shards" is empty'),
    ('{"shards": [{"name": "a"}]}', "shards[0].samples: must be an integer"),
    ('{"shards": [{"name": "a", "samples": 3}, {"name": "a", "samples": 1}]}', "shards[1].name: shard name 'a' appears twice"),
    ('{"shards": [{"name": "a", "samples": 3, "labelNoise": 2}]}', "shards[0].labelNoise: must be a number in [0, 1]"),
    ('{"shards": [{"name": "a", "samples": 4}, {"name": "b", "samples": 4}]}', "ends at row 8, but the training set has 5 rows"),
    ('{"noiseSeed": -1, "shards": [{"name": "a", "samples": 1}]}', "noiseSeed must be a non-negative integer"),
    ("/no/such/file", "neither a shard count, nor inline shards JSON, nor a readable shards file"),
])
def test_bad_layouts_say_what_is_wrong(spec, message):
    with pytest.raises(ConfigError) as e:
        layout_from_spec(spec, 5, "--shards")
    assert message in str(e.value) and "--shards" in str(e.value)


def test_label_noise_replaces_exactly_the_declared_share_by_other_classes():
    layout = apply_label_noise(layout_from_spec("3", 3000), "shard1=0.3, shard2=1")
    labels = np.arange(3000) % 10
    rows, noisy = select(layout, ["shard1", "shard2", "shard0"], labels, 10)
    assert list(rows[:3]) == [1000, 1001, 1002] and len(rows) == 3000
    changed = noisy != labels[rows]
    assert changed[:1000].sum() == 300 and changed[1000:2000].sum() == 1000 and changed[2000:].sum() == 0
    assert noisy.min() >= 0 and noisy.max() <= 9


def test_a_noisy_shard_is_the_same_dataset_in_every_selection():
    layout = apply_label_noise(layout_from_spec("4", 400), "shard3=0.5")
    labels = np.arange(400) % 10
    _, alone = select(layout, ["shard3"], labels, 10)
    _, together = select(layout, ["shard0", "shard3"], labels, 10)
    assert np.array_equal(alone, together[100:])
    other_seed = layout_from_spec(json.dumps({"noiseSeed": 1, "shards": [{"name": f"shard{i}", "samples": 100} for i in range(4)]}), 400)
    _, different = select(apply_label_noise(other_seed, "shard3=0.5"), ["shard3"], labels, 10)
    assert not np.array_equal(alone, different)


def test_selection_errors_name_the_dataset():
    layout = layout_from_spec("2", 10)
    with pytest.raises(ConfigError, match="dataset 'shard9' is not a shard \\(known: shard0, shard1\\)"):
        rows_needed(layout, ["shard9"])
    with pytest.raises(ConfigError, match="'shard0' is listed twice"):
        select(layout, ["shard0", "shard0"], np.zeros(10), 10)
    with pytest.raises(ConfigError, match="label noise for 'shard0': want a fraction in \\[0, 1\\], got 'x'"):
        apply_label_noise(layout, "shard0=x")
    with pytest.raises(ConfigError, match="label noise 'shard0': want shard=fraction"):
        apply_label_noise(layout, "shard0")
