"""Width conversion of a trained network: shapes, growing keeps the function and its new units
learn, shrinking keeps the units that matter."""

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


def test_growing_keeps_every_unit_and_the_function_exactly():
    torch.manual_seed(0)
    narrow = build("narrow")
    x = torch.randn(8, 1, 8, 8)
    grown = build("wide")
    grown.load_state_dict(convert_width(narrow.state_dict(), narrow, grown))
    assert torch.equal(grown.conv1.weight[:2], narrow.conv1.weight)
    assert torch.equal(grown.conv2.weight[:3, :2], narrow.conv2.weight)
    # The kept units read nothing from the new ones, so the output is the narrow network's.
    assert torch.equal(grown.conv2.weight[:3, 2:], torch.zeros_like(grown.conv2.weight[:3, 2:]))
    assert torch.allclose(grown(x), narrow(x), atol=1e-6, rtol=0)


def test_grown_units_start_at_the_he_scale_and_learn_at_once():
    torch.manual_seed(0)
    narrow, grown = build("narrow"), build("wide")
    grown.load_state_dict(convert_width(narrow.state_dict(), narrow, grown))
    # conv2's new units (rows 3..5) read 4 channels x 3 x 3 inputs: He scale sqrt(2 / 36).
    new_rows = grown.conv2.weight[3:]
    assert new_rows.std().item() == pytest.approx((2.0 / 36) ** 0.5, rel=0.35)
    # Their outgoing weights (fc columns of channels 3..5) start at zero but get a gradient of
    # the size of a trained unit's: the new units' activations are full-size.
    x, y = torch.randn(64, 1, 8, 8), torch.randint(0, 5, (64,))
    F.cross_entropy(grown(x), y).backward()
    grad = grown.fc.weight.grad
    new_columns, old_columns = grad[:, 3 * 16:].norm() / 3, grad[:, :3 * 16].norm() / 3
    assert new_columns.item() > 0.1 * old_columns.item()


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
