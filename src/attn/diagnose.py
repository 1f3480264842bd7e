"""Checks a reader can run on any attention module, their own included.

The contract: a callable ``f(x, key_mask)`` with ``x`` of shape ``(B, L, D)`` and ``key_mask`` of
shape ``(B, S)`` (bool, ``True`` = a real token that may be attended) or ``None``, returning a
tensor ``(B, L, D)``. :func:`adapt` wraps ``nn.MultiheadAttention`` (whose ``key_padding_mask``
means the opposite, ``True`` = ignore), ``nn.TransformerEncoderLayer`` and this package's modules;
:func:`check` adapts them itself.

>>> report = attn.diagnose.check(my_attention, d_model=32, is_causal=True)
>>> bool(report)        # True when no check failed
>>> report              # one finding per check: what was measured, why it matters, the fix

Every check feeds the module seeded random inputs and compares outputs; nothing is trained.
Dropout is made harmless by reseeding before each call, so paired calls draw the same masks.
"""

from __future__ import annotations

import copy
import html
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from attn import _checks, masks
from attn._locale import ljust, translate, width
from attn.attention import MultiHeadAttention, SelfAttention
from attn.blocks import EncoderLayer

__all__ = ["Adapter", "Finding", "Report", "adapt", "check", "dependency_map"]

#: Outputs that should not move may move by this much, relative to the output's largest entry.
EXACT_TOL = 1e-5
#: Permutation equivariance holds up to float rounding (sums in another order).
EQUIVARIANT_TOL = 1e-4
#: Mean normalised softmax entropy below which attention at initialisation is "too sharp".
#: Measured (see the debugging chapter): correct modules give 0.95-0.98 at PyTorch's default and
#: Xavier inits; without 1/sqrt(d_k) it falls to 0.88 at d_k = 8 and 0.5 at d_k = 64.
ENTROPY_MIN = 0.9


@dataclass(frozen=True)
class Finding:
    """One check's result. ``passed`` is ``None`` for a finding that only informs."""

    name: str
    passed: bool | None
    value: str
    explanation: str
    fix: str = ""

    @property
    def status(self) -> str:
        return {True: "ok", False: "FAIL", None: "info"}[self.passed]

    def __repr__(self) -> str:
        _ = translate  # the words in the reader's language (attn._locale; English: as written here)
        lines = [f"{_(self.status)}  {_(self.name)}{_(': ')}{_(self.value)}"]
        if self.passed is not True:
            lines.append(f"  {_('why: ')}{_(self.explanation)}")
            if self.fix:
                lines.append(f"  {_('fix: ')}{_(self.fix)}")
        return "\n".join(lines)


class Report:
    """The findings of :func:`check`; ``bool(report)`` is true when no finding failed."""

    def __init__(self, subject: str, findings: list[Finding]):
        self.subject = subject
        self.findings = list(findings)

    def __bool__(self) -> bool:
        return all(f.passed is not False for f in self.findings)

    def __getitem__(self, name: str) -> Finding:
        for f in self.findings:
            if f.name == name:
                return f
        raise KeyError(f"no finding named {name!r}; the findings are {[f.name for f in self.findings]}")

    def __contains__(self, name: str) -> bool:
        return any(f.name == name for f in self.findings)

    @property
    def failed(self) -> list[str]:
        """Names of the failed findings."""
        return [f.name for f in self.findings if f.passed is False]

    def _headline(self) -> str:
        n = len(self.failed)
        verdict = "all checks passed" if n == 0 else f"{n} of {len(self.findings)} checks failed"
        return translate(f"diagnose {self.subject}: {verdict}")

    def __repr__(self) -> str:
        _ = translate  # the words in the reader's language (attn._locale; English: as written here)
        lines = [self._headline()]
        w = max(width(_(f.name)) for f in self.findings)
        for f in self.findings:
            lines.append(f"  {ljust(_(f.status), 4)}  {ljust(_(f.name), w)}  {_(f.value)}")
            if f.passed is not True:
                lines.append(f"        {'':<{w}}  {_('why: ')}{_(f.explanation)}")
                if f.fix:
                    lines.append(f"        {'':<{w}}  {_('fix: ')}{_(f.fix)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        _ = translate
        colour = {"ok": "#1a7f37", "FAIL": "#cf222e", "info": "#57606a"}
        rows = "".join(
            f"<tr><td style='color:{colour[f.status]};font-weight:bold'>{_(f.status)}</td>"
            f"<td>{html.escape(_(f.name))}</td><td>{html.escape(_(f.value))}</td>"
            f"<td>{html.escape(_(f.explanation))}</td><td>{html.escape(_(f.fix))}</td></tr>"
            for f in self.findings
        )
        head = "".join(f"<th>{_(h)}</th>" for h in ("", "check", "measured", "why it matters", "fix"))
        return (f"<p><b>{html.escape(self._headline())}</b></p>"
                f"<table class='attn-table'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")


# ---------------------------------------------------------------------------------------- adapters

class Adapter:
    """``f(x, key_mask)`` around a module; ``to(dtype)`` gives a converted copy for half-precision checks."""

    def __init__(self, module: nn.Module, call: Callable, name: str):
        self.module, self.call, self.name = module, call, name

    def __call__(self, x: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
        return self.call(self.module, x, key_mask)

    def to(self, dtype: torch.dtype) -> Adapter:
        return Adapter(copy.deepcopy(self.module).to(dtype), self.call, self.name)

    def __repr__(self) -> str:
        return f"Adapter({self.name})"


def _torch_causal(L: int, is_causal: bool, device) -> torch.Tensor | None:
    return ~masks.causal(L, device=device) if is_causal else None  # PyTorch's bool masks: True = blocked


def adapt(f, *, is_causal: bool = False):
    """Wrap a module so it follows the contract ``f(x, key_mask) -> (B, L, D)``.

    Args:
        f: ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``, :class:`attn.MultiHeadAttention`,
            :class:`attn.SelfAttention`, :class:`attn.blocks.EncoderLayer`, an :class:`Adapter`, or
            any callable/module already taking ``(x, key_mask)``.
        is_causal: ask the module for causal attention (through its own mask argument).

    Returns:
        an :class:`Adapter` (modules) or ``f`` itself (plain callables).
    """
    if isinstance(f, Adapter):
        return f
    if isinstance(f, nn.MultiheadAttention):
        def call_mha(m, x, km):
            mask = _torch_causal(x.shape[1], is_causal, x.device)  # x is (B, L, D) here
            pad = None if km is None else ~km  # PyTorch's key_padding_mask: True = ignore
            xs = x if m.batch_first else x.transpose(0, 1)  # (L, B, D) without batch_first
            out = m(xs, xs, xs, key_padding_mask=pad, attn_mask=mask, need_weights=False)[0]
            return out if m.batch_first else out.transpose(0, 1)  # (B, L, D)
        return Adapter(f, call_mha, "nn.MultiheadAttention")
    if isinstance(f, nn.TransformerEncoderLayer):
        def call_layer(m, x, km):
            mask = _torch_causal(x.shape[1], is_causal, x.device)
            pad = None if km is None else ~km
            bf = m.self_attn.batch_first
            xs = x if bf else x.transpose(0, 1)
            out = m(xs, src_mask=mask, src_key_padding_mask=pad, is_causal=is_causal)
            return out if bf else out.transpose(0, 1)  # (B, L, D)
        return Adapter(f, call_layer, "nn.TransformerEncoderLayer")
    if isinstance(f, MultiHeadAttention):
        return Adapter(f, lambda m, x, km: m(x, key_mask=km, is_causal=is_causal)[0], "attn.MultiHeadAttention")
    if isinstance(f, SelfAttention):
        return Adapter(f, lambda m, x, km: m(x, mask=None if km is None else km[:, None, :], is_causal=is_causal)[0],
                       "attn.SelfAttention")
    if isinstance(f, EncoderLayer):
        return Adapter(f, lambda m, x, km: m(x, key_mask=km, is_causal=is_causal), "attn.blocks.EncoderLayer")
    if isinstance(f, nn.Module):
        return Adapter(f, lambda m, x, km: m(x, km), type(f).__name__)
    if not callable(f):
        raise TypeError(f"f must be callable as f(x, key_mask) or a module, got {type(f).__name__}")
    return f


# ------------------------------------------------------------------------------------------ probes

class _ContractError(Exception):
    pass


def _call(fn, x: torch.Tensor, key_mask: torch.Tensor | None, seed: int) -> torch.Tensor:
    """Run ``fn`` with a fixed random state (same dropout draws) and check what comes back.

    The random state is the probe's own: the caller's global generator is restored afterwards."""
    devices = [x.device.index or 0] if x.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        try:
            out = fn(x, key_mask)
        except TypeError as e:
            raise _ContractError(f"calling f(x, key_mask) with x {_checks.fmt(x.shape)} raised TypeError: {e}") from None
    if not isinstance(out, torch.Tensor):
        raise _ContractError(f"f(x, key_mask) returned {type(out).__name__}, expected a tensor {_checks.fmt(x.shape)}"
                             " (modules returning (output, weights) need an adapter)")
    if out.shape != x.shape:
        raise _ContractError(f"x {_checks.fmt(x.shape)} gave output {_checks.fmt(out.shape)}, expected {_checks.fmt(x.shape)}")
    return out


def _moved(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest change from ``a`` to ``b``, relative to ``a``'s largest entry (NaN counts as a change)."""
    a, b = a.double(), b.double()
    diff = (a - b).abs()
    if torch.isnan(diff).any():
        return math.inf
    return float(diff.max() / a.abs().max().clamp_min(1e-12)) if diff.numel() else 0.0


def _num(v: float, tol: float | None = None) -> str:
    """Rounded for stable notebook output; values under ``tol`` print as ``< tol``."""
    if math.isinf(v) or math.isnan(v):
        return "NaN/inf"
    if tol is not None and v < tol:
        return f"< {tol:.0e}"
    return f"{v:.2g}"


def _padding_mask(B: int, L: int, pad: int, left: bool) -> torch.Tensor:
    km = torch.ones(B, L, dtype=torch.bool)  # (B, S)
    if left:
        km[1:, :pad] = False
    else:
        km[1:, L - pad:] = False
    return km


def dependency_map(f, x: torch.Tensor, key_mask: torch.Tensor | None = None, *, seed: int = 0) -> torch.Tensor:
    """How much each output position moves when one input position is replaced.

    Args:
        f: a callable ``f(x, key_mask)`` (see :func:`adapt`).
        x: ``(1, L, D)`` input.

    Returns:
        ``(L, L)`` float tensor: entry ``[i, j]`` is the largest change of output ``i`` when noise
        is added to token ``j``, relative to the largest output. A causal module gives a
        lower triangle; a leak shows above the diagonal.
    """
    fn = adapt(f)
    g = torch.Generator().manual_seed(seed + 8)
    L = x.shape[1]
    with torch.no_grad():
        base = _call(fn, x, key_mask, seed)[0]  # (L, D)
        scale = base.abs().max().clamp_min(1e-12)
        rows = []
        for j in range(L):
            x2 = x.clone()
            x2[:, j] += torch.randn(x.shape[-1], generator=g, dtype=x.dtype)  # token j moved
            out = _call(fn, x2, key_mask, seed)[0]  # (L, D)
            rows.append((out - base).abs().amax(-1) / scale)  # (L,)
    return torch.stack(rows, 1)  # (L, L): [i, j] = effect of token j on output i


class _AttentionProbe(TorchFunctionMode):
    """Records the attention probabilities of every softmax (over the last dimension), every
    ``F.scaled_dot_product_attention`` call and every ``F.multi_head_attention_forward`` call."""

    def __init__(self):
        super().__init__()
        self.weights: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name == "multi_head_attention_forward":
            kw = dict(kwargs, need_weights=True, average_attn_weights=False)
            out, w = func(*args, **kw)
            self.weights.append(w.detach().float())
            return out, (w if kwargs.get("need_weights", True) else None)
        out = func(*args, **kwargs)
        if name == "scaled_dot_product_attention":
            self.weights.append(_sdpa_weights(*args, **kwargs))
        elif name == "softmax" and isinstance(out, torch.Tensor):
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            if dim in (-1, out.dim() - 1):
                self.weights.append(out.detach().float())
        return out


def _sdpa_weights(q, k, v=None, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **_):  # noqa: ARG001 (v, dropout_p: F.scaled_dot_product_attention's positional slots)
    q, k = q.detach().float(), k.detach().float()
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale  # (..., L, S)
    # PyTorch's own is_causal, seen here from inside its call: the top-left triangle.
    allowed = masks.causal(s.shape[-2], s.shape[-1], device=s.device) if is_causal else None
    if attn_mask is not None:
        # Only which keys are allowed: a float mask may carry a positional bias (ALiBi, T5) that
        # sharpens attention on purpose; the scaling check is about q . k alone.
        keep = attn_mask if attn_mask.dtype == torch.bool else masks.from_additive(attn_mask.detach())
        allowed = masks.combine(allowed, keep)
    return masks.masked_softmax(s, allowed)


def _normalised_entropy(weights: list[torch.Tensor]) -> float | None:
    values = []
    for p in weights:
        p = p.reshape(-1, p.shape[-1])  # (rows, S)
        n = (p > 0).sum(-1)
        keep = (n >= 2) & torch.isfinite(p).all(-1)
        if not keep.any():
            continue
        p, n = p[keep], n[keep]
        h = -torch.special.xlogy(p, p).sum(-1)  # (rows,)
        values.append(h / n.float().log())
    return float(torch.cat(values).mean()) if values else None


# ------------------------------------------------------------------------------------------ checks

def _check_shape(fn, x, km, seed, d_model, num_heads) -> Finding:
    for key_mask in (None, km):
        try:
            _call(fn, x, key_mask, seed)
        except _ContractError:
            raise
        except Exception as e:  # noqa: BLE001 - a callable that cannot run the first probes breaks the contract
            msg = str(e).splitlines()[0][:200] if str(e) else ""
            raise _ContractError(f"calling f(x, key_mask) with x {_checks.fmt(x.shape)} raised {type(e).__name__}: {msg}") from None
    if num_heads is not None and d_model % num_heads != 0:
        return Finding("shape contract", False, f"d_model = {d_model} is not divisible by num_heads = {num_heads}",
                       "each head needs d_model / num_heads dimensions; rounding it down drops dimensions silently",
                       "choose num_heads dividing d_model, or raise an error in the constructor")
    return Finding("shape contract", True, f"x {_checks.fmt(x.shape)} -> {_checks.fmt(x.shape)}, with and without key_mask",
                   "f(x, key_mask) returns one (B, L, D) tensor")


def _check_width(fn, d_model, seed) -> Finding:
    # Many short sequences: the spread between sequences spans the output space (within one
    # sequence, near-uniform attention makes the outputs nearly equal). Two random square
    # projections in a row can have a smallest singular value near 1e-6 of the largest, so the
    # rank is measured in float64 (a module's copy), where a truly missing dimension is ~1e-16.
    exact = hasattr(fn, "to")
    g, dtype, tol = (fn.to(torch.float64), torch.float64, 1e-10) if exact else (fn, torch.float32, 1e-6)
    x = torch.randn(2 * d_model, 2, d_model, generator=torch.Generator().manual_seed(seed + 1), dtype=dtype)  # (B, 2, D)
    with torch.no_grad():
        y = _call(g, x, None, seed).double().reshape(-1, d_model)  # (B*L, D)
    centred_rows = float(y.mean(-1).abs().max() / y.abs().max().clamp_min(1e-300)) < 1e-3 * tol  # a LayerNorm output
    expected = d_model - 1 if centred_rows else d_model
    s = torch.linalg.svdvals(y - y.mean(0))  # constant biases removed
    rank = int((s > s[0] * tol).sum())
    ok = rank >= expected
    value = f"outputs span {rank} of {d_model} dimensions" + (" (LayerNorm output: at most D - 1)" if centred_rows else "")
    return Finding("output width", ok, value,
                   "the outputs use every dimension of the model width" if ok else
                   "the output lives in a smaller subspace: an inner width below d_model (heads * d_head < d_model)",
                   "" if ok else "make num_heads * d_head equal d_model, and the output projection (d_model, d_model)")


def _check_causality(fn, x, seed, lengths) -> Finding:
    g = torch.Generator().manual_seed(seed + 2)
    worst, where = 0.0, None
    with torch.no_grad():
        for L in lengths:
            xl = x[:, :L]
            base = _call(fn, xl, None, seed)
            for t in sorted({1, L // 2, L - 1}):
                x2 = xl.clone()
                x2[:, t:] = torch.randn(x2[:, t:].shape, generator=g)
                moved = _moved(base[:, :t], _call(fn, x2, None, seed)[:, :t])
                if moved > worst:
                    worst, where = moved, (L, t)
    ok = worst <= EXACT_TOL
    value = f"outputs before the changed tokens moved by {_num(worst, EXACT_TOL)}"
    if where is not None and not ok:
        value += f" (L = {where[0]}, tokens from position {where[1]} on changed)"
    return Finding("causality", ok, value,
                   "no output depends on a later token" if ok else
                   "an output depends on later tokens: the model can read the answer during training",
                   "" if ok else "block key j > query i before the softmax, with the mask sliced for the current length")


def _check_reach(fn, x, seed) -> Finding:
    x2 = x.clone()
    x2[:, 0] = torch.randn(x.shape[-1], generator=torch.Generator().manual_seed(seed + 7))
    with torch.no_grad():
        base = _call(fn, x, None, seed)  # (B, L, D)
        out = _call(fn, x2, None, seed)
    scale = base.double().abs().max().clamp_min(1e-12)
    moved = ((out - base).double().abs().amax(-1) / scale)  # (B, L): how much each output responded
    weakest = float(moved.min()) if torch.isfinite(moved).all() else 0.0
    ok = weakest > EQUIVARIANT_TOL
    return Finding("reach", ok, f"the least responsive output moved by {_num(weakest, EQUIVARIANT_TOL)} when the first token changed",
                   "every output can see the first token, as every query may" if ok else
                   "some outputs cannot see a token they are allowed to attend: a mask too strict, or tokens mixed up",
                   "" if ok else "check the head split (view(B, L, H, E).transpose(1, 2)) and the mask's alignment")


def _check_padding(fn, x, seed, is_causal) -> Finding:
    B, L, _ = x.shape
    pad = max(1, L // 3)
    km = _padding_mask(B, L, pad, left=is_causal)
    x2 = x.clone()
    x2[~km] = torch.randn(x2[~km].shape, generator=torch.Generator().manual_seed(seed + 3))
    with torch.no_grad():
        moved = _moved(_call(fn, x, km, seed)[km], _call(fn, x2, km, seed)[km])
    ok = moved <= EXACT_TOL
    return Finding("padding", ok, f"real tokens' outputs moved by {_num(moved, EXACT_TOL)} when padding changed",
                   "padded keys get no attention" if ok else
                   "real tokens attend to padding: results depend on how a batch was padded",
                   "" if ok else "mask padded keys before the softmax; check the mask's convention (True = may attend?)")


def _check_positions(fn, x, seed, is_causal, positions) -> Finding:
    L = x.shape[1]
    g = torch.Generator().manual_seed(seed + 4)
    with torch.no_grad():
        if is_causal:  # the last query sees every key: shuffling the earlier ones matters only via positions
            perm = torch.cat([torch.randperm(L - 1, generator=g), torch.tensor([L - 1])])
            moved = _moved(_call(fn, x, None, seed)[:, -1], _call(fn, x[:, perm], None, seed)[:, -1])
        else:
            perm = torch.randperm(L, generator=g)
            moved = _moved(_call(fn, x, None, seed)[:, perm], _call(fn, x[:, perm], None, seed))
    uses = moved > EQUIVARIANT_TOL
    what = "the last output" if is_causal else "the outputs"
    value = f"shuffling the tokens moved {what} by {_num(moved, EQUIVARIANT_TOL)} beyond the shuffle: "
    value += "uses positions" if uses else "ignores positions"
    if positions is None:
        return Finding("positions", None, value,
                       "attention alone is permutation equivariant; order reaches it only through positional information"
                       if not uses else "the module knows where each token is")
    ok = uses == positions
    return Finding("positions", ok, value,
                   ("order matters to the module, as expected" if uses else "order does not matter, as expected") if ok else
                   ("the module cannot tell 'a b' from 'b a'" if positions else "the module depends on order, unexpectedly"),
                   "" if ok else ("add a positional encoding (to the input, or inside attention: RoPE, ALiBi)" if positions
                                  else "look for mixing across positions, e.g. a head reshape without transpose"))


def _check_fully_masked(fn, x, seed) -> Finding:
    B, L, _ = x.shape
    km = torch.ones(B, L, dtype=torch.bool)
    km[1:] = False  # every key of the other sequences is masked
    with torch.no_grad():
        out = _call(fn, x, km, seed)
    bad_out = int((~torch.isfinite(out)).sum())
    xg = x.clone().requires_grad_(True)
    out_g = _call(fn, xg, km, seed)
    if out_g.requires_grad:
        (grad,) = torch.autograd.grad(out_g.float().sum(), xg, allow_unused=True)
        bad_grad = 0 if grad is None else int((~torch.isfinite(grad)).sum())
    else:
        bad_grad = 0
    ok = bad_out == 0 and bad_grad == 0
    return Finding("fully masked rows", ok,
                   f"non-finite: {bad_out} of {out.numel()} outputs, {bad_grad} of {x.numel()} input gradients",
                   "a sequence with no real key gives finite outputs and gradients" if ok else
                   "softmax over only -inf is 0/0 = NaN, and one NaN spreads through the batch's loss and every weight",
                   "" if ok else "give fully masked rows zero weights (replace their scores before the softmax, "
                   "zero their weights after); in PyTorch's MultiheadAttention, avoid the eval-mode fast path")


def _check_half(fn, x, seed, is_causal, dtypes) -> Finding:
    if not hasattr(fn, "to"):
        return Finding("half precision", None, "not checked: f is a plain function",
                       "the check converts a module's weights; a plain callable keeps float32 weights",
                       "pass the module itself, or an attn.diagnose.Adapter")
    B, L, D = 3, x.shape[1], x.shape[2]
    xb = torch.randn(B, L, D, generator=torch.Generator().manual_seed(seed + 5))  # (3, L, D)
    km = _padding_mask(B, L, max(1, L // 3), left=is_causal)
    km[2] = False  # one sequence with no real key
    parts, ok = [], True
    with torch.no_grad():
        finite = torch.isfinite(_call(fn, xb, km, seed))  # where float32 is finite
        for dt in dtypes:
            short = str(dt).replace("torch.", "")
            try:
                out = _call(fn.to(dt), xb.to(dt), km, seed)
            except Exception as e:  # noqa: BLE001 - a failure in half precision is the finding
                parts.append(f"{short}: raised {type(e).__name__}: {str(e).splitlines()[0][:80]}")
                ok = False
                continue
            bad = int((~torch.isfinite(out) & finite).sum())
            ok &= bad == 0
            parts.append(f"{short}: {bad} NaN/inf where float32 is finite")
    return Finding("half precision", ok, "; ".join(parts),
                   "float16/bfloat16 stay finite where float32 is" if ok else
                   "a constant such as -1e9 becomes -inf (float16 ends at 65504), or an operation fails in half precision",
                   "" if ok else "mask with masked_fill(-inf) (or torch.finfo(dtype).min) and guard fully masked rows; "
                   "run the softmax in float32")


def _check_scaling(fn, d_model, seed, num_heads) -> Finding:
    x = torch.randn(4, 16, d_model, generator=torch.Generator().manual_seed(seed + 6))
    probe = _AttentionProbe()
    with torch.no_grad(), probe:
        _call(fn, x, None, seed)
    h = _normalised_entropy(probe.weights)
    dk = f"d_k = {d_model // num_heads}" if num_heads else "d_k unknown (pass num_heads)"
    if h is None:
        return Finding("scaling", None, "no attention weights seen",
                       "the module's softmax is not visible to the probe (a fused kernel outside torch's Python API)")
    ok = h >= ENTROPY_MIN
    return Finding("scaling", ok, f"softmax entropy at initialisation {h:.2f} of its maximum ({dk})",
                   "attention starts spread out, so gradients reach every key" if ok else
                   "attention is already sharper at initialisation than with 1/sqrt(d_k): without it the scores "
                   "grow like sqrt(d_k) and the softmax sharpens, which changes how training starts",
                   "" if ok else "divide the scores by sqrt(d_k) before the softmax")


def check(
    f,
    *,
    d_model: int,
    is_causal: bool = False,
    num_heads: int | None = None,
    positions: bool | None = None,
    length: int = 8,
    batch: int = 2,
    seed: int = 0,
    dtypes: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16),
    only: tuple[str, ...] | None = None,
) -> Report:
    """Run every check on ``f`` and return a :class:`Report`.

    Args:
        f: ``f(x, key_mask) -> (B, L, D)``, or a module :func:`adapt` knows.
        d_model: the model width ``D`` of ``x``.
        is_causal: the module should be causal (checked by perturbing future tokens); modules that
            :func:`adapt` wraps are asked for causal attention.
        num_heads: if given, checked to divide ``d_model`` and used to state ``d_k``.
        positions: ``True`` if the module should use token order (fails when it is permutation
            equivariant), ``False`` if it should not, ``None`` to report only.
        length, batch, seed: size of the probes and their random seed.
        dtypes: half-precision dtypes to compare with float32.
        only: names of the checks to run (the shape contract always runs), e.g. ``("scaling",)``.

    Returns:
        a :class:`Report`: findings "shape contract", "output width", "causality" (when
        ``is_causal``), "reach", "padding", "positions", "fully masked rows", "half precision", "scaling".
        A callable that breaks the contract gives one failed "shape contract" finding, not an error.

    Shape:
        ``x``: ``(B, L, D)``; ``key_mask``: ``(B, S)`` with ``S = L``, ``True`` = real token.
    """
    _checks.positive_int("d_model", d_model)
    _checks.integer("length", length, 4, what=" (the probes perturb, pad and mask a few positions)")
    _checks.integer("batch", batch, 2, what=" (the padding probes pad every sequence but the first)")
    fn = adapt(f, is_causal=is_causal)
    if num_heads is None and isinstance(fn, Adapter):  # read it off the module when it says
        m = fn.module
        num_heads = getattr(m, "num_heads", None) or getattr(getattr(m, "self_attn", None), "num_heads", None)
    subject = getattr(fn, "name", getattr(f, "__name__", type(f).__name__))
    x = torch.randn(batch, length, d_model, generator=torch.Generator().manual_seed(seed))
    km = _padding_mask(batch, length, max(1, length // 3), left=is_causal)
    try:
        findings = [_check_shape(fn, x, km, seed, d_model, num_heads)]
    except _ContractError as e:
        return Report(subject, [Finding("shape contract", False, str(e),
                                        "f must take (x, key_mask) and return one tensor shaped like x",
                                        "wrap the module with attn.diagnose.adapt, or write f = lambda x, key_mask: ...")])
    steps = [("output width", lambda: _check_width(fn, d_model, seed))]
    if is_causal:
        steps.append(("causality", lambda: _check_causality(fn, x, seed, (length, max(2, length - 3)))))
    steps.append(("reach", lambda: _check_reach(fn, x, seed)))
    steps += [
        ("padding", lambda: _check_padding(fn, x, seed, is_causal)),
        ("positions", lambda: _check_positions(fn, x, seed, is_causal, positions)),
        ("fully masked rows", lambda: _check_fully_masked(fn, x, seed)),
        ("half precision", lambda: _check_half(fn, x, seed, is_causal, dtypes)),
        ("scaling", lambda: _check_scaling(fn, d_model, seed, num_heads)),
    ]
    if only is not None:
        unknown = set(only) - {name for name, _ in steps} - {"shape contract", "causality"}
        if unknown:
            raise ValueError(f"only names unknown checks {sorted(unknown)}; the checks are "
                             f"{['shape contract', 'causality'] + [n for n, _ in steps if n != 'causality']}")
        steps = [(name, run) for name, run in steps if name in only]
    for name, run in steps:
        try:
            findings.append(run())
        except Exception as e:  # noqa: BLE001 - a module that crashes on a probe is a finding, not a crash
            msg = str(e).splitlines()[0][:120] if str(e) else ""
            findings.append(Finding(name, False, f"raised {type(e).__name__}: {msg}",
                                    "the module failed on this probe's input", "read the error; the probe's inputs "
                                    "follow the contract f(x (B, L, D), key_mask (B, S) bool or None)"))
    return Report(subject, findings)
