"""Width conversion of a trained network: shapes, growing keeps the function, shrinking keeps
the units that matter."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from depl.convert import convert_width, width_scaled
from depl.errors import UsageError


class Cnn(nn.Module):
    def __init__(self, c1, c2):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.fc = nn.Linear(c2 * 4 * 4, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return self.fc(F.relu(self.conv2(x)).flatten(1))


def build(name):
    return {"narrow": Cnn(2, 3), "wide": Cnn(4, 6)}[name]


def test_growing_keeps_every_unit_and_almost_the_function():
    torch.manual_seed(0)
    narrow = build("narrow")
    x = torch.randn(8, 1, 8, 8)
    grown = build("wide")
    grown.load_state_dict(convert_width(narrow.state_dict(), narrow, grown))
    assert torch.equal(grown.conv1.weight[:2], narrow.conv1.weight)
    assert torch.equal(grown.conv2.weight[:3, :2], narrow.conv2.weight)
    assert torch.allclose(grown(x), narrow(x), atol=0.02)


def test_shrinking_keeps_the_units_of_largest_importance():
    torch.manual_seed(0)
    wide = build("wide")
    with torch.no_grad():
        wide.conv1.weight[[0, 2]] *= 1e-3  # units 0 and 2 of conv1 barely matter
        wide.conv2.weight[[1, 3, 5]] *= 1e-3  # nor units 1, 3, 5 of conv2
    narrow = build("narrow")
    state = convert_width(wide.state_dict(), wide, narrow)
    narrow.load_state_dict(state)
    assert torch.equal(narrow.conv1.weight, wide.conv1.weight[[1, 3]])
    assert torch.equal(narrow.conv2.weight, wide.conv2.weight[[0, 2, 4]][:, [1, 3]])
    # The linear layer keeps each kept channel's block of 16 positions.
    blocks = torch.cat([torch.arange(c * 16, c * 16 + 16) for c in (0, 2, 4)])
    assert torch.equal(narrow.fc.weight, wide.fc.weight[:, blocks])


def test_the_hook_drops_the_optimiser_and_keeps_the_rest():
    hook = width_scaled(build)
    out = hook({"model": build("narrow").state_dict(), "optimizer": {"x": 1}, "step": 3}, "narrow", "wide")
    assert "optimizer" not in out and out["step"] == 3
    build("wide").load_state_dict(out["model"])
    with pytest.raises(UsageError, match="has no 'model' entry"):
        hook({"weights": {}}, "narrow", "wide")


def test_networks_that_are_not_a_width_family_are_refused():
    a = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    b = nn.Sequential(nn.Linear(5, 3), nn.Linear(3, 2))
    with pytest.raises(UsageError, match="input or output size"):
        convert_width(a.state_dict(), a, b)
