"""Variant conversion for width-scaled networks: the ready ``convert`` hook of ``depl.run``.

A width-scaled family is one network whose hidden layers (Conv and Linear, in the order the
module defines them) are narrower or wider per variant, with the input and the output unchanged.
Converting a trained state to another width works layer by layer, as the reference worker does
(docs/worker-contract.md section 4):

- **shrinking** is structured pruning: each hidden layer keeps the units (output channels) with
  the largest |incoming weights and bias| x |outgoing weights|, and the next layer keeps the
  matching inputs (for a Conv followed by a flatten and a Linear, each channel's block of
  positions);
- **growing** keeps every trained unit and adds new ones whose incoming weights are drawn at the
  He-initialisation scale and whose outgoing weights are zero: the grown network computes exactly
  what the narrower one did (no loss jump), and the new units learn from the first step (their
  outgoing weights get the gradient of their full-size activations). Units that start small on
  both sides (a fraction of the He scale in and out) also keep the function, but their gradients
  are the product of two small numbers: on the PyTorch reference job such a grown network trained
  slower than the full one from scratch.

The optimiser's state belongs to the old shapes: the hook drops it.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from .errors import UsageError



def _chain(module: Any) -> list[tuple[str, Any]]:
    from torch import nn

    layers = [(name, m) for name, m in module.named_modules()
              if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear))]
    if len(layers) < 2:
        raise UsageError("width conversion: the network needs at least two Conv/Linear layers")
    for name, m in layers:
        if getattr(m, "groups", 1) != 1:
            raise UsageError(f"width conversion: layer '{name}' is a grouped convolution")
    return layers


def _prefix(name: str) -> str:
    return f"{name}." if name else ""


def _shape(layer: Any) -> tuple[int, int]:
    return (layer.out_features, layer.in_features) if hasattr(layer, "out_features") else (
        layer.out_channels, layer.in_channels)


def _keep_by_importance(weight: Any, bias: Any, next_weight: Any, block: int, keep: int) -> Any:
    """Indices (ascending) of the `keep` units of largest |in| x |out|."""
    import torch

    incoming = weight.reshape(weight.shape[0], -1)
    if bias is not None:
        incoming = torch.cat([incoming, bias.reshape(-1, 1)], dim=1)
    outgoing = next_weight.reshape(next_weight.shape[0], weight.shape[0], block, -1)
    importance = incoming.norm(dim=1) * outgoing.transpose(0, 1).reshape(weight.shape[0], -1).norm(dim=1)
    chosen = torch.topk(importance, keep).indices
    return torch.sort(chosen).values


def convert_width(state: dict, source: Any, target: Any) -> dict:
    """`state` (a state_dict of `source`) as a state_dict of `target`, a wider or narrower
    member of the same family. Raises UsageError when the two are not such a pair."""
    import torch

    src_layers, tgt_layers = _chain(source), _chain(target)
    if [n for n, _ in src_layers] != [n for n, _ in tgt_layers]:
        raise UsageError("width conversion: the two variants do not have the same layers")
    names = [n for n, _ in tgt_layers]
    src_shapes = [_shape(m) for _, m in src_layers]
    tgt_shapes = [_shape(m) for _, m in tgt_layers]
    if src_shapes[0][1] != tgt_shapes[0][1] or src_shapes[-1][0] != tgt_shapes[-1][0]:
        raise UsageError("width conversion: the variants differ in their input or output size")
    # Each hidden layer feeds the next one `block` inputs per unit (1 between convolutions, the
    # spatial positions when a convolution is flattened into a Linear layer).
    blocks = []
    for i in range(len(names) - 1):
        s_out, s_next_in = src_shapes[i][0], src_shapes[i + 1][1]
        t_out, t_next_in = tgt_shapes[i][0], tgt_shapes[i + 1][1]
        if s_next_in % s_out or t_next_in % t_out or s_next_in // s_out != t_next_in // t_out:
            raise UsageError(f"width conversion: layer '{names[i + 1]}' does not take whole "
                             f"blocks of '{names[i]}''s outputs in both variants")
        blocks.append(s_next_in // s_out)
    converted = dict(state)
    generator = torch.Generator().manual_seed(int(torch.initial_seed() % (2**63 - 1)))
    kept_inputs = None  # source indices of the previous layer's units, in target order (-1: new)
    for i, name in enumerate(names):
        w_key, b_key = _prefix(name) + "weight", _prefix(name) + "bias"
        if w_key not in state:
            raise UsageError(f"width conversion: the state has no '{w_key}'")
        weight, bias = state[w_key], state.get(b_key)
        target_weight = tgt_layers[i][1].weight
        out_src, out_tgt = weight.shape[0], target_weight.shape[0]
        # Which source unit each target unit is (-1: a new one).
        if i == len(names) - 1 or out_tgt == out_src:
            rows = torch.arange(out_tgt)
        elif out_tgt < out_src:
            rows = _keep_by_importance(weight, bias, state[_prefix(names[i + 1]) + "weight"],
                                       blocks[i], out_tgt)
        else:
            rows = torch.cat([torch.arange(out_src), torch.full((out_tgt - out_src,), -1)])
        if kept_inputs is None:
            columns = torch.arange(weight.shape[1])
        else:
            block = blocks[i - 1]
            columns = (kept_inputs.reshape(-1, 1) * block + torch.arange(block)).reshape(-1)
            columns[(kept_inputs < 0).repeat_interleave(block)] = -1
        fan_in = target_weight[0].numel()
        new_weight = torch.randn(target_weight.shape, generator=generator,
                                 dtype=weight.dtype) * math.sqrt(2.0 / fan_in)
        old_rows, old_cols = rows >= 0, columns >= 0
        # A kept unit reads nothing from a new one: the grown network computes what the old one did.
        new_weight[old_rows.nonzero().reshape(-1, 1), (~old_cols).nonzero().reshape(1, -1)] = 0
        source_block = weight.reshape(weight.shape[0], weight.shape[1], -1)[rows[old_rows]][:, columns[old_cols]]
        flat = new_weight.reshape(new_weight.shape[0], new_weight.shape[1], -1)
        row_index = old_rows.nonzero().reshape(-1, 1)
        col_index = old_cols.nonzero().reshape(1, -1)
        flat[row_index, col_index] = source_block
        converted[w_key] = new_weight
        if bias is not None:
            new_bias = torch.zeros(out_tgt, dtype=bias.dtype)
            new_bias[old_rows] = bias[rows[old_rows]]
            converted[b_key] = new_bias
        kept_inputs = rows
    return converted


def width_scaled(build: Callable[[str], Any], key: str = "model",
                 drop: Sequence[str] = ("optimizer",)) -> Callable[[Any, str, str], Any]:
    """The ``convert`` hook for a width-scaled family.

    `build(name)` returns a fresh module of variant `name` (only its shapes are used). The
    checkpointed state is a dict whose `key` entry is the module's state_dict; it comes back with
    that entry converted and the entries in `drop` (the optimiser's state) removed.
    """

    def convert(state: Any, from_model: str, to_model: str) -> Any:
        if not isinstance(state, dict) or key not in state:
            raise UsageError(f"width conversion: the checkpoint's state has no '{key}' entry "
                             "(save {'" + key + "': model.state_dict(), ...})")
        out = {k: v for k, v in state.items() if k not in drop}
        out[key] = convert_width(state[key], build(from_model), build(to_model))
        return out

    return convert
