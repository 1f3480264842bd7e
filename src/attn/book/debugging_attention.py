"""What the debugging chapter counts about memory: the bytes of one training step, parted into what
grows with the batch (the activations autograd keeps for the backward pass) and what does not (the
weights, their gradients and AdamW's two moments); and what splitting a model across devices
divides, counted on the ``meta`` device (shapes without memory).

Every count here is exact and machine-independent: bytes of tensors, not a reading of the
operating system's memory (that is :func:`attn.measure.peak_memory_growth`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from attn import _checks

__all__ = ["saved_bytes", "step_memory", "layerwise_split", "tensor_parallel_split", "TENSOR_PARALLEL_DIM"]


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def saved_bytes(forward: Callable[[], torch.Tensor], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes of the tensors autograd saves for the backward pass while ``forward()`` runs, each
    storage counted once, the tensors of ``exclude`` (the parameters: they are stored anyway) not
    counted. These are the activations a training step holds at the start of its backward pass.

    Unlike :func:`attn.efficient.saved_activation_bytes`, which skips the parameters themselves,
    this skips every view of them too (a transposed weight that a matmul keeps), so that what it
    counts grows with the batch and nothing else.

    Returns: the count in bytes; ``forward``'s result is discarded (its graph is freed).

    Shape: ``forward()`` returns any tensor, e.g. a model's output ``(B, L, D)``; the count is an ``int``."""
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            seen[storage.data_ptr()] = storage.nbytes()  # views of one storage: counted once
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return sum(seen.values())


def step_memory(model: nn.Module, batch: Callable[[int], torch.Tensor], batch_sizes: Iterable[int]) -> list[dict]:
    """The bytes of one training step of ``model`` with AdamW, for each batch size ``B``.

    Args:
        model: a module taking one tensor; its loss here is the mean square of its output.
        batch: ``B -> input`` (e.g. ``(B, L, D)``).
        batch_sizes: the ``B`` to count.

    Returns: one dict per ``B`` with ``"B"``, ``"weights"``, ``"gradients"``, ``"AdamW state"``
    (measured: the state tensors after one real step) and ``"activations"`` (:func:`saved_bytes`),
    all in bytes. The model's weights change (it took a step)."""
    params = [p for p in model.parameters() if p.requires_grad]
    weights = sum(_nbytes(p) for p in params)
    opt = torch.optim.AdamW(params, lr=1e-3)
    rows = []
    for B in batch_sizes:
        _checks.positive_int("batch size", B)
        x = batch(B)
        activations = saved_bytes(lambda x=x: model(x), exclude=params)
        opt.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        opt.step()
        gradients = sum(_nbytes(p.grad) for p in params if p.grad is not None)
        state = sum(_nbytes(v) for s in opt.state.values() for v in s.values()
                    if isinstance(v, torch.Tensor) and v.dim() > 0)  # the moments, not the step counter
        rows.append({"B": B, "weights": weights, "gradients": gradients, "AdamW state": state,
                     "activations": activations})
    return rows


def layerwise_split(groups: dict[str, int], devices: int) -> list[int]:
    """Layer-wise (pipeline) model parallelism: consecutive groups (e.g. layers) on each device, as
    evenly as the count allows. ``groups`` maps a group's name to its bytes, in model order.

    Returns: the bytes each device holds, ``devices`` numbers summing to the total."""
    _checks.positive_int("devices", devices)
    if devices > len(groups):
        raise ValueError(f"devices must be at most the number of groups ({len(groups)}), got {devices}")
    sizes = list(groups.values())
    per = [len(sizes) // devices + (i < len(sizes) % devices) for i in range(devices)]  # groups per device
    bounds = [sum(per[:i]) for i in range(devices + 1)]
    return [sum(sizes[bounds[i] : bounds[i + 1]]) for i in range(devices)]


#: How tensor parallelism cuts the parameters of an ``attn.blocks.EncoderLayer`` (Megatron's split):
#: the fused ``W_Q; W_K; W_V`` rows by heads and the feed-forward's first matrix by its hidden units
#: (dim 0), the output projection and the feed-forward's second matrix along their inputs (dim 1);
#: what is not listed (LayerNorms, the biases added after a sum over devices) is copied on each.
TENSOR_PARALLEL_DIM = {"self_attn.in_proj.weight": 0, "self_attn.in_proj.bias": 0, "self_attn.out_proj.weight": 1,
                       "ff.linear1.weight": 0, "ff.linear1.bias": 0, "ff.linear2.weight": 1}


def tensor_parallel_split(layer: nn.Module, devices: int) -> dict[str, int]:
    """The parameter bytes of one device when ``layer`` (an ``attn.blocks.EncoderLayer``) is cut
    across ``devices`` by :data:`TENSOR_PARALLEL_DIM`, counted from the shards' shapes (build the
    layer on ``torch.device("meta")``: no memory is used).

    Returns: ``{"split": bytes of the cut tensors on one device, "copied": bytes every device
    holds whole, "whole layer": bytes of the layer}``.

    Raises:
        ValueError: if ``devices`` does not divide a cut dimension (e.g. the heads' rows).
    """
    _checks.positive_int("devices", devices)
    split = copied = 0
    for name, p in layer.named_parameters():
        dim = TENSOR_PARALLEL_DIM.get(name)
        if dim is None:
            copied += _nbytes(p)
            continue
        _checks.divisible(f"{name}'s dimension {dim}", p.shape[dim], devices, by_name="devices")
        shard = p.chunk(devices, dim=dim)[0]  # on meta: a shape, no data
        split += _nbytes(shard)
    return {"split": split, "copied": copied, "whole layer": sum(_nbytes(p) for p in layer.parameters())}
