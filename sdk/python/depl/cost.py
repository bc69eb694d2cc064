"""What a model costs per sample, in the units of a job's ``models[]``: computePerSampleGflop
(forward and backward) and parameterBytes (float32 gradients exchanged per step)."""

from __future__ import annotations

from typing import Any


def model_cost(module: Any, sample: Any) -> dict[str, float]:
    """Counts the multiply-accumulates of `module`'s Conv and Linear layers on one forward pass
    of the batch `sample` and its parameters.

    Training costs about three forward passes (the backward pass computes gradients of both the
    activations and the weights), so ``computePerSampleGflop = 6 * MACs per sample / 1e9``: for a
    fully connected network that is 6 FLOP per parameter, the rule the reference worker uses.
    """
    import torch
    from torch import nn

    macs = 0

    def count(layer: Any, inputs: Any, output: Any) -> None:
        nonlocal macs
        if isinstance(layer, nn.Linear):
            macs += output.numel() * layer.in_features
        else:  # a convolution: every output element sums kernel x input-channels/groups products
            kernel = 1
            for size in layer.kernel_size:
                kernel *= size
            macs += output.numel() * kernel * (layer.in_channels // layer.groups)

    hooks = [m.register_forward_hook(count) for m in module.modules()
             if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d))]
    try:
        with torch.no_grad():
            module(sample)
    finally:
        for hook in hooks:
            hook.remove()
    batch = sample.shape[0] if hasattr(sample, "shape") and len(sample.shape) > 0 else 1
    parameters = sum(p.numel() for p in module.parameters() if p.requires_grad)
    return {"computePerSampleGflop": 6.0 * macs / batch / 1e9,
            "parameterBytes": float(4 * parameters)}
