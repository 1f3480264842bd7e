"""The model families people load: BERT, GPT, T5, BART and ViT, built from ``attn``'s own pieces.

Every attention here is :class:`attn.MultiHeadAttention`, and every layer one of
:mod:`attn.blocks`, chosen through its constructor: BERT, GPT and ViT stack
:class:`attn.blocks.EncoderLayer` (post-LN or pre-LN, their activation), T5 stacks encoder and
decoder layers built with RMSNorm and without biases, BART post-LN encoder and decoder layers.
Each class has ``from_hf(model)``, which copies the weights of the corresponding Hugging Face
``transformers`` model, so the equality can be checked (tests/test_variants.py: float32, eval mode,
to 1e-5), and a class attribute ``CARD`` that describes it (:func:`comparison` reads the cards
as rows). ``transformers`` is needed only by ``from_hf``.

=========  ===================================  ==============================  ==================
class      attention                            positions                       norm
=========  ===================================  ==============================  ==================
BERT       bidirectional self                   learned absolute + segments     post-LN
GPT        causal self                          learned absolute                pre-LN (as GPT-2)
T5         bidirectional self, causal, cross    relative buckets (shared bias)  pre-RMSNorm
BART       bidirectional self, causal, cross    learned absolute (per stack)    post-LN
ViT        bidirectional self over patches      learned (or 2-D sin-cos)        pre-LN
=========  ===================================  ==============================  ==================
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attn import _checks, _moved
from attn.attention import KVCache, MultiHeadAttention
from attn.blocks import ACTIVATIONS, DecoderLayer, EncoderLayer, activation_function
from attn.generation import GenerationMixin
from attn.positional import LearnedPositionalEncoding, Sinusoidal2DPositionalEncoding, T5RelativePositionBias

__all__ = ["BART", "BERT", "GPT", "T5", "ViT", "comparison"]

# --- from_hf helpers --------------------------------------------------------------------------


def _transformers():
    try:
        import transformers
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "from_hf copies weights from a Hugging Face model and needs the package 'transformers', which is "
            "not installed here. Install it with:  pip install transformers", name="transformers") from None
    return transformers


def _check_family(model, accepted: tuple[str, ...], ours: str) -> None:
    _transformers()
    name = type(model).__name__
    if name not in accepted:
        raise TypeError(f"{ours}.from_hf expects one of {', '.join(accepted)}; got {name}")


def _square(config, option: str) -> int:
    """A size that ``transformers`` allows as an int or an (H, W) pair; attn's ViT is square-only."""
    value = getattr(config, option)
    if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] == value[1]:
        value = value[0]
    try:
        return _checks.positive_int(option, value)
    except ValueError:
        raise ValueError(f"unsupported configuration: {option}={value!r}; attn's ViT takes square images and "
                         f"patches, one integer (or an (n, n) pair)") from None


def _require(config, option: str, ok, supported: str) -> None:
    value = getattr(config, option, None)
    if not (ok(value) if callable(ok) else value == ok):
        raise ValueError(f"unsupported configuration: {option}={value!r} (attn supports {supported})")


def _activation_name(config, option: str) -> str:
    value = getattr(config, option)
    if value not in ACTIVATIONS:
        raise ValueError(f"unsupported configuration: {option}={value!r} (attn supports {sorted(ACTIVATIONS)})")
    return value


@torch.no_grad()
def _copy_qkv(mha: MultiHeadAttention, q: nn.Linear, k: nn.Linear, v: nn.Linear, o: nn.Linear, *,
              q_scale: float = 1.0) -> None:
    """Stack separate query/key/value projections into ``mha.in_proj`` (W_q; W_k; W_v)."""
    mha.in_proj.weight.copy_(torch.cat([q.weight * q_scale, k.weight, v.weight]))
    mha.out_proj.weight.copy_(o.weight)
    if mha.in_proj.bias is not None:
        mha.in_proj.bias.copy_(torch.cat([q.bias * q_scale, k.bias, v.bias]))
        mha.out_proj.bias.copy_(o.bias)


@torch.no_grad()
def _copy(dst: nn.Module, src: nn.Module) -> None:
    dst.load_state_dict(src.state_dict())


def _pick_layers(caches, i):
    return caches[i] if caches is not None else None


# --- what the families share --------------------------------------------------------------------


class _Family(nn.Module):
    """A model family: its class attribute ``CARD`` describes it (:func:`comparison` reads the cards)."""

    CARD: dict[str, str] = {}

    @classmethod
    def describe(cls) -> dict[str, str]:
        """A copy of ``CARD``: family, attention, mask, positions, norm, objective, use and paper."""
        return dict(cls.CARD)


class _Decoder(_Family):
    """A family that generates tokens: what :class:`attn.generation.GenerationMixin` reads."""

    @property
    def vocab_size(self) -> int:
        """How many tokens it predicts: the rows of its token embedding."""
        return self.embed.num_embeddings

    @property
    def max_positions(self) -> int | None:
        """How many positions its learned table holds (``None`` where positions are relative)."""
        return self.max_len


class _EncoderDecoder(GenerationMixin, _Decoder):
    """An encoder-decoder that generates: it supplies ``encode(src, src_key_mask)`` -> the memory
    ``(B, S, D)``, ``_decode(tgt_in, memory, src_key_mask, caches=...)`` -> logits ``(B, T, V)``
    (positions continue after the tokens already in the caches) and ``self.decoder``, its layers."""

    is_encoder_decoder = True

    def new_caches(self, capacity: int | None = None, *, cross: bool = True) -> list[tuple[KVCache, KVCache | None]]:
        """(self-attention, cross-attention) caches per decoder layer: ``capacity`` rows allocated at
        once for the first, the memory's keys and values kept from the first step for the second
        (``cross=False``: none, the memory is projected again at every step)."""
        return [(KVCache(capacity=capacity), KVCache(static=True) if cross else None) for _ in self.decoder]

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_key_mask: torch.Tensor | None = None, *,
               caches: list[tuple[KVCache, KVCache | None]] | None = None) -> torch.Tensor:
        """``tgt_in`` ``(B, T)``, ``memory`` ``(B, S, D)`` -> logits ``(B, T, V)``."""
        _checks.token_ids("tgt_in", tgt_in, self.vocab_size)
        return self._decode(tgt_in, memory, src_key_mask, caches=caches)

    def forward(self, src, tgt_in, src_key_mask=None) -> torch.Tensor:
        return self.decode(tgt_in, self.encode(src, src_key_mask), src_key_mask)

    def _generation_context(self, src: torch.Tensor, src_key_mask: torch.Tensor | None = None):
        return self.encode(src, src_key_mask), src_key_mask  # the memory, computed once

    def _decoder_logits(self, tokens: torch.Tensor, context, caches, past: int) -> torch.Tensor:  # noqa: ARG002
        memory, src_key_mask = context
        return self._decode(tokens, memory, src_key_mask, caches=caches)  # positions: continue after the cached ones


# --- BERT ---------------------------------------------------------------------------------------


class BERT(_Family):
    """Encoder-only (Devlin et al., 2019): bidirectional self-attention, post-LN, learned absolute
    positions plus segment embeddings, and a masked-language-model head tied to the embeddings.

    Args:
        vocab_size, d_model, num_heads, num_layers, d_ff: sizes (``d_ff`` defaults to ``4 * d_model``).
        max_len: positions in the learned table.
        type_vocab_size: segments (2 in BERT).
        activation, dropout, eps: as in the paper's code (``"gelu"``, 0.1, 1e-12).
        pooler: add the ``tanh`` pooler over the first token (``[CLS]``) that ``BertModel`` has.

    Shape:
        ``tokens`` ``(B, L)`` -> ``encode``: ``(B, L, D)``; ``forward``: MLM logits ``(B, L, V)``.
    """

    CARD = dict(family="encoder-only", attention="bidirectional self", mask="padding only",
                positions="learned absolute + segment", norm="post-LN (LayerNorm)",
                objective="masked-token prediction (15%, 80/10/10)", use="understanding: classify, tag, retrieve",
                paper="devlin2019bert")

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4, num_layers: int = 2,
                 d_ff: int | None = None, *, max_len: int = 512, type_vocab_size: int = 2, activation: str = "gelu",
                 dropout: float = 0.0, eps: float = 1e-12, pooler: bool = False):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.pos = LearnedPositionalEncoding(d_model, max_len)
        self.segment = nn.Embedding(type_vocab_size, d_model)
        nn.init.normal_(self.segment.weight, std=0.02)
        self.embed_norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff or 4 * d_model, activation=activation, dropout=dropout,
                         norm_first=False, eps=eps) for _ in range(num_layers))
        self.pooler = nn.Linear(d_model, d_model) if pooler else None
        # MLM head: dense + activation + LayerNorm, then the (tied) embedding matrix and a bias.
        self.mlm_dense = nn.Linear(d_model, d_model)
        self.mlm_act = activation_function(activation)
        self.mlm_norm = nn.LayerNorm(d_model, eps=eps)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab_size))

    def encode(self, tokens: torch.Tensor, *, segments: torch.Tensor | None = None,
               key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``tokens``, ``segments`` ``(B, L)``; ``key_mask`` ``(B, L)`` True = real token -> ``(B, L, D)``."""
        _checks.token_ids("tokens", tokens, self.embed.num_embeddings)
        if segments is None:
            segments = torch.zeros_like(tokens)
        else:
            _checks.token_ids("segments", segments, self.segment.num_embeddings, what="type_vocab_size")
        x = self.pos(self.embed(tokens)) + self.segment(segments)  # (B, L, D)
        x = self.dropout(self.embed_norm(x))
        for layer in self.layers:
            x = layer(x, key_mask=key_mask)  # every token sees every real token
        return x

    def pool(self, hidden: torch.Tensor) -> torch.Tensor:
        """``tanh(W h_[CLS] + b)``: ``(B, L, D)`` -> ``(B, D)`` (needs ``pooler=True``)."""
        if self.pooler is None:
            raise ValueError("this BERT has no pooler: build it with pooler=True (or from a BertModel)")
        return torch.tanh(self.pooler(hidden[:, 0]))  # (B, D)

    def forward(self, tokens: torch.Tensor, *, segments: torch.Tensor | None = None,
                key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """MLM logits ``(B, L, V)``."""
        h = self.encode(tokens, segments=segments, key_mask=key_mask)
        h = self.mlm_norm(self.mlm_act(self.mlm_dense(h)))  # (B, L, D)
        return h @ self.embed.weight.T + self.mlm_bias  # (B, L, V): tied output embedding

    @classmethod
    def from_hf(cls, model) -> BERT:
        """A copy of a ``transformers`` ``BertModel`` or ``BertForMaskedLM`` (weights included)."""
        _check_family(model, ("BertModel", "BertForMaskedLM"), "BERT")
        c = model.config
        _require(c, "is_decoder", False, "encoders (is_decoder=False)")
        _require(c, "add_cross_attention", False, "no cross-attention")
        _require(c, "position_embedding_type", lambda v: v in (None, "absolute"), "absolute positions")
        _require(c, "attention_probs_dropout_prob", lambda v: v == c.hidden_dropout_prob,
                 f"one dropout rate: attention dropout equal to hidden_dropout_prob={c.hidden_dropout_prob}")
        bert = model.bert if hasattr(model, "bert") else model
        ours = cls(c.vocab_size, c.hidden_size, c.num_attention_heads, c.num_hidden_layers, c.intermediate_size,
                   max_len=c.max_position_embeddings, type_vocab_size=c.type_vocab_size,
                   activation=_activation_name(c, "hidden_act"), dropout=c.hidden_dropout_prob,
                   eps=c.layer_norm_eps, pooler=getattr(bert, "pooler", None) is not None)
        e = bert.embeddings
        _copy(ours.embed, e.word_embeddings)
        _copy(ours.pos.embedding, e.position_embeddings)
        _copy(ours.segment, e.token_type_embeddings)
        _copy(ours.embed_norm, e.LayerNorm)
        for mine, theirs in zip(ours.layers, bert.encoder.layer, strict=True):
            a = theirs.attention
            _copy_qkv(mine.self_attn, a.self.query, a.self.key, a.self.value, a.output.dense)
            _copy(mine.norm1, a.output.LayerNorm)
            _copy(mine.ff.linear1, theirs.intermediate.dense)
            _copy(mine.ff.linear2, theirs.output.dense)
            _copy(mine.norm2, theirs.output.LayerNorm)
        if ours.pooler is not None:
            _copy(ours.pooler, bert.pooler.dense)
        if hasattr(model, "cls"):
            p = model.cls.predictions
            if p.decoder.weight.data_ptr() != e.word_embeddings.weight.data_ptr():
                raise ValueError("unsupported configuration: an MLM decoder not tied to the word embeddings")
            _copy(ours.mlm_dense, p.transform.dense)
            _copy(ours.mlm_norm, p.transform.LayerNorm)
            with torch.no_grad():
                ours.mlm_bias.copy_(p.decoder.bias if p.decoder.bias is not None else p.bias)
        return ours.eval()


# --- GPT ----------------------------------------------------------------------------------------


class GPT(GenerationMixin, _Decoder):
    """Decoder-only, as GPT-2 (Radford et al., 2019): causal self-attention, pre-LN with a final
    LayerNorm (GPT, Radford et al. 2018, was post-LN; GPT-2 moved the LayerNorms to each
    sub-block's input and added the final one), learned absolute positions, output layer tied to the token embeddings, and
    generation with the KV cache, temperature and top-k.

    Shape:
        ``tokens`` ``(B, L)`` -> logits ``(B, L, V)``.
    """

    CARD = dict(family="decoder-only", attention="causal self", mask="causal (+ padding)",
                positions="learned absolute", norm="pre-LN (LayerNorm) + final LN",
                objective="next-token prediction", use="generation: text, code, chat", paper="radford2019language")

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4, num_layers: int = 2,
                 d_ff: int | None = None, *, max_len: int = 256, activation: str = "gelu_new",
                 dropout: float = 0.0, eps: float = 1e-5):
        super().__init__()
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.pos = LearnedPositionalEncoding(d_model, max_len)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff or 4 * d_model, activation=activation, dropout=dropout,
                         norm_first=True, eps=eps) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.head.weight = self.embed.weight  # tied: one matrix reads tokens in and writes them out

    def new_caches(self, capacity: int | None = None) -> list[KVCache]:
        """One self-attention :class:`KVCache` per layer; ``capacity``: the rows to allocate at once."""
        return [KVCache(capacity=capacity) for _ in self.layers]

    def forward(self, tokens: torch.Tensor, *, key_mask: torch.Tensor | None = None,
                caches: list[KVCache] | None = None) -> torch.Tensor:
        """``tokens`` ``(B, L)``; ``key_mask`` ``(B, S)`` True = real (S counts cached tokens);
        ``caches`` from :meth:`new_caches` to decode step by step -> logits ``(B, L, V)``."""
        _checks.token_ids("tokens", tokens, self.vocab_size)
        return self._logits(tokens, key_mask=key_mask, caches=caches)

    def _logits(self, tokens: torch.Tensor, *, key_mask=None, caches=None) -> torch.Tensor:
        """:meth:`forward` without the check of ``tokens`` (generation checks its prompt once)."""
        past = len(caches[0]) if caches else 0
        x = self.dropout(self.pos(self.embed(tokens), offset=past))  # (B, L, D)
        for i, layer in enumerate(self.layers):
            x = layer(x, key_mask=key_mask, is_causal=True, cache=_pick_layers(caches, i))
        return self.head(self.norm(x))  # (B, L, V)

    def _generation_context(self, prompt: torch.Tensor, src_key_mask=None) -> None:  # noqa: ARG002  (the mixin's hook)
        _checks.token_ids("prompt", prompt, self.vocab_size)

    def _decoder_logits(self, tokens: torch.Tensor, context, caches, past: int) -> torch.Tensor:  # noqa: ARG002
        return self._logits(tokens, caches=caches)  # the caches know how many tokens came before

    @classmethod
    def from_hf(cls, model) -> GPT:
        """A copy of a ``transformers`` ``GPT2LMHeadModel`` (weights included)."""
        _check_family(model, ("GPT2LMHeadModel",), "GPT")
        c = model.config
        _require(c, "scale_attn_weights", True, "scale_attn_weights=True")
        _require(c, "scale_attn_by_inverse_layer_idx", False, "scale_attn_by_inverse_layer_idx=False")
        _require(c, "add_cross_attention", False, "no cross-attention")
        _require(c, "attn_pdrop", lambda v: v == c.resid_pdrop == c.embd_pdrop,
                 f"one dropout rate: attn_pdrop = resid_pdrop = embd_pdrop (got {c.resid_pdrop}, {c.embd_pdrop})")
        t = model.transformer
        if model.lm_head.weight.data_ptr() != t.wte.weight.data_ptr():
            raise ValueError("unsupported configuration: tie_word_embeddings=False (GPT ties its output layer)")
        D = c.n_embd
        ours = cls(c.vocab_size, D, c.n_head, c.n_layer, c.n_inner or 4 * D, max_len=c.n_positions,
                   activation=_activation_name(c, "activation_function"), dropout=c.resid_pdrop,
                   eps=c.layer_norm_epsilon)
        _copy(ours.embed, t.wte)
        _copy(ours.pos.embedding, t.wpe)
        with torch.no_grad():
            for mine, h in zip(ours.layers, t.h, strict=True):
                # GPT-2's Conv1D stores weights as (in, out): transpose into nn.Linear's (out, in).
                mine.self_attn.in_proj.weight.copy_(h.attn.c_attn.weight.T)
                mine.self_attn.in_proj.bias.copy_(h.attn.c_attn.bias)
                mine.self_attn.out_proj.weight.copy_(h.attn.c_proj.weight.T)
                mine.self_attn.out_proj.bias.copy_(h.attn.c_proj.bias)
                mine.ff.linear1.weight.copy_(h.mlp.c_fc.weight.T)
                mine.ff.linear1.bias.copy_(h.mlp.c_fc.bias)
                mine.ff.linear2.weight.copy_(h.mlp.c_proj.weight.T)
                mine.ff.linear2.bias.copy_(h.mlp.c_proj.bias)
                _copy(mine.norm1, h.ln_1)
                _copy(mine.norm2, h.ln_2)
        _copy(ours.norm, t.ln_f)
        return ours.eval()


# --- T5 -----------------------------------------------------------------------------------------


def _t5_layer(d_model: int, num_heads: int, d_ff: int, *, relative_bias: T5RelativePositionBias, cross: bool,
              dropout: float = 0.0, eps: float = 1e-6, activation: str = "relu") -> EncoderLayer | DecoderLayer:
    """One T5 block: the pre-norm layer of :mod:`attn.blocks` built with RMSNorm and no biases, its
    self-attention carrying the stack's shared relative position bias; the decoder's adds
    cross-attention (without positions).

    T5 does not divide the scores by ``sqrt(E)``. :class:`attn.MultiHeadAttention` always does, so
    ``T5.from_hf`` multiplies ``W_q`` by ``sqrt(E)``: ``(sqrt(E) q) · k / sqrt(E) = q · k``, the
    same function with the scale folded into the weights.
    """
    layer = DecoderLayer if cross else EncoderLayer
    return layer(d_model, num_heads, d_ff, dropout=dropout, activation=activation, norm_first=True, norm="rms",
                 eps=eps, positional=relative_bias, bias=False)


class T5(_EncoderDecoder):
    """Encoder-decoder (Raffel et al., 2020): RMSNorm before each sublayer, no biases, one relative
    position bias per stack shared by its layers, no ``1/sqrt(E)`` scale, cross-attention whose
    keys/values are cached once per input, and one embedding matrix for encoder, decoder and output.

    Shape:
        ``src`` ``(B, S)``, ``tgt_in`` ``(B, T)`` (starting with ``decoder_start_id``) -> ``(B, T, V)``.
    """

    CARD = dict(family="encoder-decoder", attention="bidirectional self; causal self; cross",
                mask="padding (encoder), causal (decoder)", positions="relative buckets, shared per stack",
                norm="pre-RMSNorm, no biases", objective="span corruption (sentinels) / text-to-text",
                use="text to text: translate, summarise", paper="raffel2020exploring")

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4, num_layers: int = 2,
                 num_decoder_layers: int | None = None, d_ff: int | None = None, *, num_buckets: int = 32,
                 max_distance: int = 128, dropout: float = 0.0, eps: float = 1e-6, activation: str = "relu",
                 scale_output: bool = True, tie_output: bool = True, pad_id: int = 0, eos_id: int = 1,
                 decoder_start_id: int = 0):
        super().__init__()
        self.d_model, self.scale_output = d_model, scale_output
        self.pad_id, self.eos_id, self.decoder_start_id = pad_id, eos_id, decoder_start_id
        d_ff = d_ff or 4 * d_model
        self.embed = nn.Embedding(vocab_size, d_model)
        self.enc_bias = T5RelativePositionBias(num_heads, num_buckets, max_distance, bidirectional=True)
        self.dec_bias = T5RelativePositionBias(num_heads, num_buckets, max_distance, bidirectional=False)
        kw = dict(dropout=dropout, eps=eps, activation=activation)
        self.encoder = nn.ModuleList(_t5_layer(d_model, num_heads, d_ff, relative_bias=self.enc_bias, cross=False, **kw)
                                     for _ in range(num_layers))
        self.decoder = nn.ModuleList(_t5_layer(d_model, num_heads, d_ff, relative_bias=self.dec_bias, cross=True, **kw)
                                     for _ in range(num_decoder_layers or num_layers))
        self.enc_norm = nn.RMSNorm(d_model, eps=eps)
        self.dec_norm = nn.RMSNorm(d_model, eps=eps)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        if tie_output:
            self.head.weight = self.embed.weight

    max_positions = None  # relative positions: any length

    def generation_defaults(self) -> dict[str, int | None]:
        """``start_id``, ``eos_id`` and ``pad_id`` from the configuration, as Hugging Face takes them."""
        return {"start_id": self.decoder_start_id, "eos_id": self.eos_id, "pad_id": self.pad_id}

    def encode(self, src: torch.Tensor, src_key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``src`` ``(B, S)`` -> memory ``(B, S, D)``."""
        _checks.token_ids("src", src, self.vocab_size)
        x = self.drop(self.embed(src))  # (B, S, D): no absolute positions at all
        for layer in self.encoder:
            x = layer(x, key_mask=src_key_mask)
        return self.drop(self.enc_norm(x))

    def _decode(self, tgt_in, memory, src_key_mask=None, *, caches=None) -> torch.Tensor:
        """:meth:`decode` without the check of ``tgt_in`` (generation chooses its tokens)."""
        x = self.drop(self.embed(tgt_in))  # (B, T, D)
        for i, layer in enumerate(self.decoder):
            cache, memory_cache = caches[i] if caches is not None else (None, None)
            x = layer(x, memory, memory_key_mask=src_key_mask, is_causal=True, cache=cache, memory_cache=memory_cache)
        x = self.drop(self.dec_norm(x))
        if self.scale_output:  # the tied output layer sees d_model ** -0.5 times the hidden state
            x = x * self.d_model**-0.5
        return self.head(x)  # (B, T, V)

    @classmethod
    def from_hf(cls, model) -> T5:
        """A copy of a ``transformers`` ``T5ForConditionalGeneration`` (weights included)."""
        _check_family(model, ("T5ForConditionalGeneration",), "T5")
        c = model.config
        _require(c, "is_gated_act", False, "feed_forward_proj='relu' or 'gelu' (not gated)")
        if c.d_kv * c.num_heads != c.d_model:
            raise ValueError(f"unsupported configuration: d_kv * num_heads = {c.d_kv} * {c.num_heads} != "
                             f"d_model = {c.d_model} (attn's heads split d_model)")
        tied = model.lm_head.weight.data_ptr() == model.shared.weight.data_ptr()
        scale = getattr(c, "scale_decoder_outputs", c.tie_word_embeddings)
        ours = cls(c.vocab_size, c.d_model, c.num_heads, c.num_layers, c.num_decoder_layers, c.d_ff,
                   num_buckets=c.relative_attention_num_buckets, max_distance=c.relative_attention_max_distance,
                   dropout=c.dropout_rate, eps=c.layer_norm_epsilon, activation=_activation_name(c, "dense_act_fn"),
                   scale_output=bool(scale), tie_output=tied, pad_id=c.pad_token_id, eos_id=c.eos_token_id,
                   decoder_start_id=c.decoder_start_token_id)
        _copy(ours.embed, model.shared)
        if not tied:
            _copy(ours.head, model.lm_head)
        q_scale = math.sqrt(c.d_kv)  # fold T5's missing 1/sqrt(E) into W_q
        for stack, mine_layers, bias in ((model.encoder, ours.encoder, ours.enc_bias),
                                         (model.decoder, ours.decoder, ours.dec_bias)):
            _copy(bias.embedding, stack.block[0].layer[0].SelfAttention.relative_attention_bias)
            for mine, block in zip(mine_layers, stack.block, strict=True):
                sa = block.layer[0]
                _copy_qkv(mine.self_attn, sa.SelfAttention.q, sa.SelfAttention.k, sa.SelfAttention.v,
                          sa.SelfAttention.o, q_scale=q_scale)
                _copy(mine.norm1, sa.layer_norm)
                cross = isinstance(mine, DecoderLayer)
                if cross:
                    ca = block.layer[1]
                    _copy_qkv(mine.cross_attn, ca.EncDecAttention.q, ca.EncDecAttention.k, ca.EncDecAttention.v,
                              ca.EncDecAttention.o, q_scale=q_scale)
                    _copy(mine.norm2, ca.layer_norm)
                ff = block.layer[-1]
                with torch.no_grad():
                    mine.ff.linear1.weight.copy_(ff.DenseReluDense.wi.weight)
                    mine.ff.linear2.weight.copy_(ff.DenseReluDense.wo.weight)
                _copy(mine.norm3 if cross else mine.norm2, ff.layer_norm)
        _copy(ours.enc_norm, model.encoder.final_layer_norm)
        _copy(ours.dec_norm, model.decoder.final_layer_norm)
        return ours.eval()


# --- BART ---------------------------------------------------------------------------------------


class BART(_EncoderDecoder):
    """Encoder-decoder (Lewis et al., 2020) trained as a denoising autoencoder: the layers of the
    original Transformer (post-LN, biases, GELU), learned absolute positions in both stacks, a
    LayerNorm on the embeddings before each stack, one embedding matrix for encoder, decoder and
    output, and a fixed bias on the output logits.

    The attention needs nothing new: the layers are :class:`attn.blocks.EncoderLayer` and
    :class:`attn.blocks.DecoderLayer` with ``norm_first=False``, and the positions
    :class:`attn.positional.LearnedPositionalEncoding`. What makes a BART a BART is its objective
    (the decoder rewrites the whole corrupted input, see ``attn.book.pretraining.text_infilling``).

    Args:
        vocab_size, d_model, num_heads, num_layers, num_decoder_layers, d_ff: sizes
            (``num_decoder_layers`` defaults to ``num_layers``, ``d_ff`` to ``4 * d_model``).
        max_len: positions in each stack's learned table.
        activation, dropout, eps: ``"gelu"``, 0.0, 1e-5 (LayerNorm's, as in BART).
        scale_embedding: multiply the token embeddings by ``sqrt(d_model)`` (off in BART).
        pad_id, eos_id, decoder_start_id: the special ids generation uses (BART's: 1, 2 and 2).

    Shape:
        ``src`` ``(B, S)``, ``tgt_in`` ``(B, T)`` (starting with ``decoder_start_id``) -> ``(B, T, V)``.
    """

    CARD = dict(family="encoder-decoder", attention="bidirectional self; causal self; cross",
                mask="padding (encoder), causal (decoder)", positions="learned absolute, one table per stack",
                norm="post-LN (LayerNorm) + LN on embeddings", objective="denoising: rewrite text with spans masked",
                use="text to text: summarise, translate, generate", paper="lewis2020bart")

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4, num_layers: int = 2,
                 num_decoder_layers: int | None = None, d_ff: int | None = None, *, max_len: int = 256,
                 activation: str = "gelu", dropout: float = 0.0, eps: float = 1e-5, scale_embedding: bool = False,
                 pad_id: int = 1, eos_id: int = 2, decoder_start_id: int = 2):
        super().__init__()
        self.max_len, self.pad_id, self.eos_id, self.decoder_start_id = max_len, pad_id, eos_id, decoder_start_id
        self.embed_scale = math.sqrt(d_model) if scale_embedding else 1.0
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.enc_pos = LearnedPositionalEncoding(d_model, max_len)
        self.dec_pos = LearnedPositionalEncoding(d_model, max_len)
        self.enc_embed_norm = nn.LayerNorm(d_model, eps=eps)
        self.dec_embed_norm = nn.LayerNorm(d_model, eps=eps)
        kw = dict(dropout=dropout, activation=activation, norm_first=False, eps=eps)
        d_ff = d_ff or 4 * d_model
        self.encoder = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, **kw) for _ in range(num_layers))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, **kw)
                                     for _ in range(num_decoder_layers or num_layers))
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.head.weight = self.embed.weight  # tied: one matrix reads tokens in and writes them out
        self.register_buffer("logits_bias", torch.zeros(vocab_size))  # fixed (not trained), zero unless loaded

    def generation_defaults(self) -> dict[str, int | None]:
        """``start_id``, ``eos_id`` and ``pad_id`` from the configuration, as Hugging Face takes them."""
        return {"start_id": self.decoder_start_id, "eos_id": self.eos_id, "pad_id": self.pad_id}

    def encode(self, src: torch.Tensor, src_key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``src`` ``(B, S)``; ``src_key_mask`` ``(B, S)`` True = real token -> the memory ``(B, S, D)``."""
        _checks.token_ids("src", src, self.vocab_size)
        x = self.enc_pos(self.embed(src) * self.embed_scale)  # (B, S, D): positions 0 .. S - 1
        x = self.drop(self.enc_embed_norm(x))
        for layer in self.encoder:
            x = layer(x, key_mask=src_key_mask)  # post-LN, every token sees every real token
        return x

    def _decode(self, tgt_in, memory, src_key_mask=None, *, caches=None) -> torch.Tensor:
        """:meth:`decode` without the check of ``tgt_in`` (generation chooses its tokens)."""
        past = len(caches[0][0]) if caches else 0  # tokens already in the self-attention caches
        x = self.dec_pos(self.embed(tgt_in) * self.embed_scale, offset=past)  # (B, T, D)
        x = self.drop(self.dec_embed_norm(x))
        for i, layer in enumerate(self.decoder):
            cache, memory_cache = caches[i] if caches is not None else (None, None)
            x = layer(x, memory, memory_key_mask=src_key_mask, is_causal=True, cache=cache, memory_cache=memory_cache)
        return self.head(x) + self.logits_bias  # (B, T, V)

    @classmethod
    def from_hf(cls, model) -> BART:
        """A copy of a ``transformers`` ``BartForConditionalGeneration`` (weights included).

        Hugging Face's learned position tables have two extra rows at the top (an ``offset`` of 2
        from fairseq, which counted positions after the padding id): position ``p`` reads row
        ``p + 2``. attn's tables start at position 0, so the copy drops those two rows."""
        _check_family(model, ("BartForConditionalGeneration",), "BART")
        c = model.config
        _require(c, "encoder_attention_heads", c.decoder_attention_heads,
                 f"one head count: decoder_attention_heads={c.decoder_attention_heads}")
        _require(c, "encoder_ffn_dim", c.decoder_ffn_dim, f"one feed-forward width: decoder_ffn_dim={c.decoder_ffn_dim}")
        for option in ("attention_dropout", "activation_dropout"):
            _require(c, option, c.dropout, f"one dropout rate: {option} equal to dropout={c.dropout}")
        for option in ("encoder_layerdrop", "decoder_layerdrop"):
            _require(c, option, lambda v: not v, "no LayerDrop (0.0)")
        m = model.model
        if model.lm_head.weight.data_ptr() != m.shared.weight.data_ptr():
            raise ValueError("unsupported configuration: tie_word_embeddings=False (BART ties its output layer)")
        offset = m.encoder.embed_positions.offset  # 2: the rows before position 0
        ours = cls(c.vocab_size, c.d_model, c.encoder_attention_heads, c.encoder_layers, c.decoder_layers,
                   c.encoder_ffn_dim, max_len=c.max_position_embeddings,
                   activation=_activation_name(c, "activation_function"), dropout=c.dropout,
                   scale_embedding=bool(c.scale_embedding), pad_id=c.pad_token_id, eos_id=c.eos_token_id,
                   decoder_start_id=c.decoder_start_token_id)
        with torch.no_grad():
            ours.embed.weight.copy_(m.shared.weight)
            ours.logits_bias.copy_(model.final_logits_bias[0])
            ours.enc_pos.embedding.weight.copy_(m.encoder.embed_positions.weight[offset:])
            ours.dec_pos.embedding.weight.copy_(m.decoder.embed_positions.weight[offset:])
        _copy(ours.enc_embed_norm, m.encoder.layernorm_embedding)
        _copy(ours.dec_embed_norm, m.decoder.layernorm_embedding)
        for mine, theirs in zip(ours.encoder, m.encoder.layers, strict=True):
            a = theirs.self_attn
            _copy_qkv(mine.self_attn, a.q_proj, a.k_proj, a.v_proj, a.out_proj)
            _copy(mine.norm1, theirs.self_attn_layer_norm)
            _copy(mine.ff.linear1, theirs.fc1)
            _copy(mine.ff.linear2, theirs.fc2)
            _copy(mine.norm2, theirs.final_layer_norm)
        for mine, theirs in zip(ours.decoder, m.decoder.layers, strict=True):
            a, x = theirs.self_attn, theirs.encoder_attn
            _copy_qkv(mine.self_attn, a.q_proj, a.k_proj, a.v_proj, a.out_proj)
            _copy(mine.norm1, theirs.self_attn_layer_norm)
            _copy_qkv(mine.cross_attn, x.q_proj, x.k_proj, x.v_proj, x.out_proj)
            _copy(mine.norm2, theirs.encoder_attn_layer_norm)
            _copy(mine.ff.linear1, theirs.fc1)
            _copy(mine.ff.linear2, theirs.fc2)
            _copy(mine.norm3, theirs.final_layer_norm)
        return ours.eval()


# --- ViT ----------------------------------------------------------------------------------------


class ViT(_Family):
    """Vision Transformer (Dosovitskiy et al., 2021): non-overlapping patches embedded by one
    strided convolution, a learned ``[CLS]`` token, learned (or fixed 2-D sin-cos) positions,
    pre-LN encoder layers, a final LayerNorm and a linear classifier on ``[CLS]``.

    Args:
        image_size, patch_size, channels: the input ``(B, C, H, W)`` with ``H = W = image_size``.
        num_classes: classifier outputs; ``None`` returns the ``[CLS]`` features instead.
        positions: ``"learned"`` (ViT), ``"sincos2d"`` (fixed; ``[CLS]`` gets none) or ``"none"``
            (no position code at all: the encoder then sees a set of patches, and its ``[CLS]``
            output is the same for any order of them, an ablation).

    Shape:
        ``images`` ``(B, C, H, W)`` -> ``encode``: ``(B, 1 + N, D)`` with ``N = (H / P)²`` patches;
        ``forward``: ``(B, num_classes)``.
    """

    CARD = dict(family="encoder-only (images)", attention="bidirectional self over patches + [CLS]",
                mask="none", positions="learned absolute (or 2-D sin-cos)", norm="pre-LN (LayerNorm) + final LN",
                objective="image classification from [CLS]", use="vision: classify, embed images",
                paper="dosovitskiy2021image")

    def __init__(self, image_size: int, patch_size: int, num_classes: int | None, d_model: int = 64,
                 num_heads: int = 4, num_layers: int = 2, d_ff: int | None = None, *, channels: int = 1,
                 positions: str = "learned", activation: str = "gelu", dropout: float = 0.0, eps: float = 1e-12,
                 pooler: bool = False):
        super().__init__()
        _checks.positive_int("patch_size", patch_size)
        self.grid = _checks.divisible("image_size", image_size, patch_size, by_name="patch_size")  # patches a side
        self.image_size, self.patch_size, self.channels = image_size, patch_size, channels
        N = self.grid**2
        self.patch = nn.Conv2d(channels, d_model, kernel_size=patch_size, stride=patch_size)
        self.cls = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)
        if positions == "learned":
            self.pos = LearnedPositionalEncoding(d_model, N + 1)
        elif positions == "sincos2d":
            self.pos = Sinusoidal2DPositionalEncoding(d_model, self.grid, self.grid)
        elif positions == "none":
            self.pos = nn.Identity()  # the ablation: patches as a set
        else:
            raise ValueError(f"positions must be 'learned', 'sincos2d' or 'none', got {positions!r}")
        self.positions = positions
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff or 4 * d_model, activation=activation, dropout=dropout,
                         norm_first=True, eps=eps) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.pooler = nn.Linear(d_model, d_model) if pooler else None
        self.head = nn.Linear(d_model, num_classes) if num_classes else nn.Identity()

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` -> ``(B, 1 + N, D)``: ``[CLS]`` first, then the patches row by row."""
        _checks.tensor("images", images)
        if images.dim() != 4 or tuple(images.shape[1:]) != (self.channels, self.image_size, self.image_size):
            raise ValueError(f"images must have shape (B, {self.channels}, {self.image_size}, {self.image_size}), "
                             f"got {tuple(images.shape)}")
        B = images.shape[0]
        x = self.patch(images).flatten(2).transpose(1, 2)  # (B, N, D): one token per patch
        if self.positions == "sincos2d":
            x = torch.cat([self.cls.expand(B, -1, -1), self.pos(x)], dim=1)  # (B, 1 + N, D)
        else:
            x = self.pos(torch.cat([self.cls.expand(B, -1, -1), x], dim=1))  # (B, 1 + N, D)
        x = self.dropout(x)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

    def pool(self, hidden: torch.Tensor) -> torch.Tensor:
        """``ViTModel``'s pooler, ``tanh(W h_[CLS] + b)`` ``(B, D)`` (needs ``pooler=True``)."""
        if self.pooler is None:
            raise ValueError("this ViT has no pooler: build it with pooler=True (or from a ViTModel)")
        return torch.tanh(self.pooler(hidden[:, 0]))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.encode(images)[:, 0])  # (B, num_classes): read out from [CLS]

    @classmethod
    def from_hf(cls, model) -> ViT:
        """A copy of a ``transformers`` ``ViTModel`` or ``ViTForImageClassification``."""
        _check_family(model, ("ViTModel", "ViTForImageClassification"), "ViT")
        c = model.config
        _require(c, "qkv_bias", True, "qkv_bias=True")
        _require(c, "pooler_act", lambda v: v in (None, "tanh"), "pooler_act='tanh'")
        _require(c, "attention_probs_dropout_prob", lambda v: v == c.hidden_dropout_prob,
                 f"one dropout rate: attention dropout equal to hidden_dropout_prob={c.hidden_dropout_prob}")
        if getattr(c, "head_dim", None) not in (None, c.hidden_size // c.num_attention_heads):
            raise ValueError(f"unsupported configuration: head_dim={c.head_dim} (attn uses hidden_size / heads)")
        vit = model.vit if hasattr(model, "vit") else model
        pooler = getattr(vit, "pooler", None)
        if pooler is not None and pooler.dense.out_features != c.hidden_size:
            raise ValueError(f"unsupported configuration: pooler_output_size={pooler.dense.out_features} != hidden_size")
        num_classes = c.num_labels if hasattr(model, "classifier") else None
        ours = cls(_square(c, "image_size"), _square(c, "patch_size"), num_classes, c.hidden_size, c.num_attention_heads,
                   c.num_hidden_layers, c.intermediate_size, channels=c.num_channels,
                   activation=_activation_name(c, "hidden_act"), dropout=c.hidden_dropout_prob,
                   eps=c.layer_norm_eps, pooler=pooler is not None)
        e = vit.embeddings
        _copy(ours.patch, e.patch_embeddings.projection)
        with torch.no_grad():
            ours.cls.copy_(e.cls_token)
            ours.pos.embedding.weight.copy_(e.position_embeddings[0])
        for mine, layer in zip(ours.layers, vit.layers, strict=True):
            a = layer.attention
            _copy_qkv(mine.self_attn, a.q_proj, a.k_proj, a.v_proj, a.o_proj)
            _copy(mine.norm1, layer.layernorm_before)
            _copy(mine.ff.linear1, layer.mlp.fc1)
            _copy(mine.ff.linear2, layer.mlp.fc2)
            _copy(mine.norm2, layer.layernorm_after)
        _copy(ours.norm, vit.layernorm)
        if pooler is not None:
            _copy(ours.pooler, pooler.dense)
        if num_classes:
            _copy(ours.head, model.classifier)
        return ours.eval()


# --- the comparison table -----------------------------------------------------------------------

_COLUMNS = ("family", "attention", "mask", "positions", "norm", "objective", "use")


def comparison(classes=(BERT, GPT, T5, BART, ViT)) -> list[dict[str, str]]:
    """One row per class, read from each class's ``describe()``."""
    return [{"model": c.__name__, **{k: c.describe()[k] for k in _COLUMNS}} for c in classes]


def __getattr__(name: str):
    return _moved.attribute(__name__, name)  # names that moved to attn.book, until attn 0.3
