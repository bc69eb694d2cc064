"""The PyTorch reference job's network: a small CNN (two 5x5 convolutions of stride 2 and a
linear classifier) whose variants differ in channel width, so their compute really differs.

Stride-2 convolutions rather than pooling: on one CPU core (Debian's torch, no BLAS library)
max pooling over the full-resolution feature maps cost more than the convolutions themselves.
The full variant has 32 and 64 channels: wide enough that its epochs cost what its FLOP say, so
that the narrower variants save real time (at 16 and 32 channels the per-step costs that do not
shrink with the width made `eighth` only 3.6 times cheaper than `full` on one core).
"""

from __future__ import annotations

from torch import nn
from torch.nn import functional as F

# Channels of the full variant's two convolutions; the variants scale both.
FULL_CHANNELS = (32, 64)
VARIANTS = {"full": 1.0, "half": 0.5, "quarter": 0.25, "eighth": 0.125}


class Cnn(nn.Module):
    def __init__(self, width: float) -> None:
        super().__init__()
        c1 = max(1, round(FULL_CHANNELS[0] * width))
        c2 = max(1, round(FULL_CHANNELS[1] * width))
        self.conv1 = nn.Conv2d(1, c1, 5, stride=2, padding=2)   # 28x28 -> 14x14
        self.conv2 = nn.Conv2d(c1, c2, 5, stride=2, padding=2)  # 14x14 -> 7x7
        self.fc = nn.Linear(c2 * 7 * 7, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(x.flatten(1))


def build(variant: str) -> Cnn:
    """A freshly initialised network of `variant` (one of VARIANTS)."""
    return Cnn(VARIANTS[variant])
