"""attn.blocks equals PyTorch's Transformer layers after copying the weights."""

import pytest
import torch
from torch import nn
from torch.testing import assert_close

import attn
from attn import masks
from attn.blocks import AttentionOnlyLayer, Decoder, DecoderLayer, EncoderLayer, Transformer
from attn.models import TokenModel

TOL = dict(atol=2e-5, rtol=2e-5)
D, H, FF = 32, 4, 64


def _both_train_without_dropout(*modules):
    # Training mode keeps PyTorch off its inference fast path (nested tensors zero the padded
    # positions); dropout 0 keeps training mode deterministic.
    for m in modules:
        m.train()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_equals_pytorch_with_masks(norm_first, activation):
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=activation, batch_first=True,
                                     norm_first=norm_first)
    ours = EncoderLayer.from_torch(ref)
    _both_train_without_dropout(ref, ours)
    x = torch.randn(3, 7, D)
    key_mask = masks.padding([7, 5, 2])[:, 0]
    assert_close(ours(x), ref(x), **TOL)
    assert_close(ours(x, key_mask=key_mask), ref(x, src_key_padding_mask=~key_mask), **TOL)
    causal = masks.causal(7)
    assert_close(ours(x, mask=causal, key_mask=key_mask),
                 ref(x, src_mask=~causal, src_key_padding_mask=~key_mask), **TOL)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_pytorch_with_masks(norm_first):
    ref = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    ours = DecoderLayer.from_torch(ref)
    _both_train_without_dropout(ref, ours)
    x, memory = torch.randn(2, 6, D), torch.randn(2, 9, D)
    tgt_keys, mem_keys = masks.padding([6, 4])[:, 0], masks.padding([9, 3])[:, 0]
    expected = ref(x, memory, tgt_mask=~masks.causal(6), tgt_key_padding_mask=~tgt_keys,
                   memory_key_padding_mask=~mem_keys)
    assert_close(ours(x, memory, key_mask=tgt_keys, memory_key_mask=mem_keys), expected, **TOL)


@pytest.mark.parametrize("norm_first", [False, True])
def test_full_transformer_equals_nn_transformer(norm_first):
    torch.manual_seed(0)
    ref = nn.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=FF, dropout=0.0,
                         batch_first=True, norm_first=norm_first)
    ours = Transformer.from_torch(ref)
    _both_train_without_dropout(ref, ours)
    src, tgt = torch.randn(2, 8, D), torch.randn(2, 5, D)
    src_keys = masks.padding([8, 6])[:, 0]
    expected = ref(src, tgt, tgt_mask=~masks.causal(5), src_key_padding_mask=~src_keys,
                   memory_key_padding_mask=~src_keys)
    assert_close(ours(src, tgt, src_key_mask=src_keys), expected, **TOL)
    n_ours = sum(p.numel() for p in ours.parameters())
    n_ref = sum(p.numel() for p in ref.parameters())
    assert n_ours == n_ref


def test_eval_mode_matches_on_real_positions():
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True).eval()
    ours = EncoderLayer.from_torch(ref).eval()
    x = torch.randn(2, 6, D)
    key_mask = masks.padding([6, 4])[:, 0]
    with torch.no_grad():
        a, b = ours(x, key_mask=key_mask), ref(x, src_key_padding_mask=~key_mask)
    assert_close(a[key_mask], b[key_mask], **TOL)


def test_step_by_step_decoding_with_caches_equals_the_parallel_pass():
    torch.manual_seed(0)
    layer = DecoderLayer(D, H, FF, dropout=0.0)
    dec = Decoder(layer, 3, nn.LayerNorm(D)).eval()
    x, memory = torch.randn(2, 7, D), torch.randn(2, 5, D)
    with torch.no_grad():
        full = dec(x, memory)
        caches = dec.new_caches()
        steps = [dec(x[:, t : t + 1], memory, caches=caches) for t in range(7)]
    assert_close(torch.cat(steps, 1), full, **TOL)


def test_base_transformer_parameter_count_matches_the_formula():
    model = Transformer()  # d_model 512, 8 heads, 6 + 6 layers, d_ff 2048
    d, f = 512, 2048
    mha = 4 * d * d + 4 * d
    ffn = 2 * d * f + f + d
    ln = 2 * d
    expected = 6 * (mha + ffn + 2 * ln) + 6 * (2 * mha + ffn + 3 * ln) + 2 * ln
    assert sum(p.numel() for p in model.parameters()) == expected


def test_unknown_activation_is_a_clear_error():
    with pytest.raises(ValueError, match=r"activation must be one of \['gelu', 'gelu_new', 'gelu_pytorch_tanh', 'relu'\], got 'tanh'"):
        EncoderLayer(D, H, FF, activation="tanh")


def test_reexported():
    assert attn.blocks.EncoderLayer is EncoderLayer


def test_stacked_layers_start_from_different_weights():
    enc = attn.blocks.Encoder(EncoderLayer(D, H, FF), 3)
    dec = Decoder(DecoderLayer(D, H, FF), 2)
    for stack in (enc, dec):
        w = [layer.self_attn.in_proj.weight for layer in stack.layers]
        assert not any(torch.equal(a, b) for i, a in enumerate(w) for b in w[i + 1 :])
        assert all(torch.equal(layer.norm1.weight, torch.ones(D)) for layer in stack.layers)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_and_decoder_stacks_equal_pytorch_after_from_torch(norm_first):
    enc_ref = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True,
                                                               norm_first=norm_first), 3,
                                    norm=nn.LayerNorm(D), enable_nested_tensor=False)
    dec_ref = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True,
                                                               norm_first=norm_first), 2)
    enc, dec = attn.blocks.Encoder.from_torch(enc_ref), Decoder.from_torch(dec_ref)
    _both_train_without_dropout(enc_ref, dec_ref, enc, dec)
    src, tgt = torch.randn(2, 7, D), torch.randn(2, 4, D)
    keys = masks.padding([7, 5])[:, 0]
    memory = enc(src, key_mask=keys)
    assert_close(memory, enc_ref(src, src_key_padding_mask=~keys), **TOL)
    assert_close(dec(tgt, memory, memory_key_mask=keys),
                 dec_ref(tgt, memory, tgt_mask=~masks.causal(4), memory_key_padding_mask=~keys), **TOL)


# --- from_torch copies every activation exactly, and bias-free layers (issue 9, item 4) ---------

ACTIVATIONS = {
    "relu": "relu",
    "gelu": "gelu",
    "F.relu": torch.nn.functional.relu,
    "F.gelu": torch.nn.functional.gelu,
    "tanh-GELU lambda": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "nn.GELU(tanh)": nn.GELU(approximate="tanh"),
    "nn.ReLU()": nn.ReLU(),
    "torch.tanh": torch.tanh,
    "F.silu": torch.nn.functional.silu,
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_from_torch_copies_the_activation_exactly(name, kind):
    torch.manual_seed(0)
    kw = dict(dropout=0.0, activation=ACTIVATIONS[name], batch_first=True)
    x, memory = torch.randn(2, 5, D), torch.randn(2, 6, D)
    if kind == "encoder":
        ref = nn.TransformerEncoderLayer(D, H, FF, **kw)
        ours = EncoderLayer.from_torch(ref)
        _both_train_without_dropout(ref, ours)
        got, expected = ours(x), ref(x)
    else:
        ref = nn.TransformerDecoderLayer(D, H, FF, **kw)
        ours = DecoderLayer.from_torch(ref)
        _both_train_without_dropout(ref, ours)
        got, expected = ours(x, memory, is_causal=False), ref(x, memory)
    assert_close(got, expected, atol=1e-6, rtol=1e-6)


def test_a_callable_activation_is_used_as_given():
    ff = attn.blocks.FeedForward(4, 8, activation=torch.tanh)
    x = torch.randn(3, 4)
    assert_close(ff(x), ff.linear2(torch.tanh(ff.linear1(x))))
    with pytest.raises(TypeError, match=r"activation must be a name in attn.blocks.ACTIVATIONS or a callable, got int"):
        attn.blocks.FeedForward(4, 8, activation=3)


@pytest.mark.parametrize("norm_first", [False, True])
def test_from_torch_copies_bias_free_layers(norm_first):
    ref = nn.Transformer(D, H, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=FF, dropout=0.0,
                         batch_first=True, norm_first=norm_first, bias=False)
    ours = Transformer.from_torch(ref)
    _both_train_without_dropout(ref, ours)
    assert all(not name.endswith("bias") for name, _ in ours.named_parameters())
    src, tgt = torch.randn(2, 6, D), torch.randn(2, 4, D)
    assert_close(ours(src, tgt), ref(src, tgt, tgt_mask=~masks.causal(4)), **TOL)
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, bias=False)
    assert_close(EncoderLayer.from_torch(layer).train()(src), layer.train()(src), **TOL)


# --- stacked copies keep each module's own initialisation (issue 9, item 5) --------------------

def test_encoder_copies_keep_the_t5_bias_table_at_std_0_02():
    torch.manual_seed(0)
    t5 = attn.T5RelativePositionBias(8, num_buckets=256, max_distance=512)  # 2048 entries
    enc = attn.blocks.Encoder(EncoderLayer(D, 8, FF, positional=t5), 3)
    tables = [layer.self_attn.positional.embedding.weight for layer in enc.layers]
    for w in tables:
        assert 0.018 < w.std().item() < 0.022, w.std().item()
    assert not any(torch.equal(a, b) for i, a in enumerate(tables) for b in tables[i + 1 :])


def test_encoder_copies_redraw_shaw_vectors_at_std_0_02():
    torch.manual_seed(0)
    shaw = attn.positional.ShawRelativePositionalBias(D // H, num_heads=H, max_distance=64)  # 4 x 129 x 8
    enc = attn.blocks.Encoder(EncoderLayer(D, H, FF, positional=shaw), 3)
    vectors = [layer.self_attn.positional.vectors for layer in enc.layers]
    for w in vectors:
        assert 0.018 < w.std().item() < 0.022, w.std().item()
    assert not any(torch.equal(a, b) for i, a in enumerate(vectors) for b in vectors[i + 1 :])


# --- a copy keeps the dtype (issue 18, item 5) ---------------------------------------------------

@pytest.mark.parametrize("kind", ["encoder_layer", "decoder_layer", "transformer"])
def test_from_torch_of_a_float64_layer_is_a_float64_copy(kind):
    """The copy has the original's dtype, so its float64 weights are copied exactly and it takes
    float64 input, equal to PyTorch's layer to float64 precision."""
    torch.manual_seed(0)
    kw = dict(dropout=0.0, batch_first=True, dtype=torch.float64)
    src = torch.randn(2, 5, D, dtype=torch.float64)
    tgt = torch.randn(2, 3, D, dtype=torch.float64)
    if kind == "encoder_layer":
        ref = nn.TransformerEncoderLayer(D, H, FF, **kw)
        ours = EncoderLayer.from_torch(ref)
        run_ref, run_ours = (lambda: ref(src)), (lambda: ours(src))
    elif kind == "decoder_layer":
        ref = nn.TransformerDecoderLayer(D, H, FF, **kw)
        ours = DecoderLayer.from_torch(ref)
        run_ref, run_ours = (lambda: ref(tgt, src)), (lambda: ours(tgt, src, is_causal=False))
    else:
        ref = nn.Transformer(D, H, 2, 2, FF, **kw)
        ours = Transformer.from_torch(ref)
        run_ref = lambda: ref(src, tgt, tgt_mask=~masks.causal(3))  # noqa: E731
        run_ours = lambda: ours(src, tgt)  # noqa: E731
    assert {p.dtype for p in ours.parameters()} == {torch.float64}
    _both_train_without_dropout(ref, ours)
    assert_close(run_ours(), run_ref(), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("name", ["gelu_new", "gelu_pytorch_tanh"])
def test_layers_take_every_activation_of_the_one_table(name):
    """The tanh-approximate GELU that GPT-2 and others name in their configs is a public option of
    the layers (variants used to patch it into a FeedForward's private attribute)."""
    torch.manual_seed(0)
    layer = EncoderLayer(D, H, FF, activation=name, dropout=0.0)
    x = torch.randn(3, D)
    assert layer.ff.activation == name and attn.blocks.ACTIVATIONS[name] is not None
    ff = layer.ff
    assert_close(ff(x), ff.linear2(torch.nn.functional.gelu(ff.linear1(x), approximate="tanh")))


def test_no_module_assigns_another_objects_private_attributes():
    """Compose through public constructors: ``other._x = ...`` anywhere in ``src/attn`` is a defect
    (``self._x = ...`` and ``cls._x = ...`` are a class's own business)."""
    import ast
    import pathlib

    offenders = []
    for path in sorted(pathlib.Path(attn.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for t in targets:
                for a in ast.walk(t) if t is not None else ():
                    if (isinstance(a, ast.Attribute) and isinstance(a.ctx, ast.Store) and a.attr.startswith("_")
                            and not a.attr.startswith("__") and not (isinstance(a.value, ast.Name)
                                                                      and a.value.id in ("self", "cls"))):
                        offenders.append(f"{path.name}:{a.lineno} {ast.unparse(a)}")
    assert offenders == []


@pytest.mark.parametrize("norm_first", [False, True])
def test_rms_norm_is_a_constructor_choice(norm_first):
    torch.manual_seed(0)
    layer = EncoderLayer(D, H, FF, dropout=0.0, norm="rms", norm_first=norm_first, bias=False, eps=1e-6).eval()
    assert isinstance(layer.norm1, nn.RMSNorm) and isinstance(layer.norm2, nn.RMSNorm) and layer.norm1.eps == 1e-6
    x = torch.randn(2, 5, D)

    def rms(n, h):
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * n.weight

    def sa(h):
        return layer.self_attn(h)[0]

    if norm_first:
        h = x + sa(rms(layer.norm1, x))
        expected = h + layer.ff(rms(layer.norm2, h))
    else:
        h = rms(layer.norm1, x + sa(x))
        expected = rms(layer.norm2, h + layer.ff(h))
    assert_close(layer(x), expected, atol=1e-5, rtol=1e-5)
    dec = DecoderLayer(D, H, FF, norm="rms")
    assert all(isinstance(n, nn.RMSNorm) for n in (dec.norm1, dec.norm2, dec.norm3))
    with pytest.raises(ValueError, match=r"norm must be 'layer' or 'rms', got 'batch'"):
        EncoderLayer(D, H, FF, norm="batch")


# --- defaults, arguments passed through every level, copies (mutation testing, make mutate) ---

def test_layer_defaults_are_pytorchs():
    ref = nn.TransformerEncoderLayer(8, 2, batch_first=True)
    for ours in (EncoderLayer(8, 2), DecoderLayer(8, 2)):
        assert ours.ff.linear1.out_features == ref.linear1.out_features == 2048
        assert ours.norm_first is False and ours.norm1.eps == ref.norm1.eps == 1e-5
        assert ours.self_attn.in_proj.bias is not None and ours.ff.linear1.bias is not None  # bias=True
        assert ours.self_attn.dropout == ref.dropout.p == 0.1 and ours.dropout1.p == 0.1
        assert ours.ff.activation == "relu"
    model = Transformer(8, 2)
    assert model.encoder.layers[0].norm_first is False and model.encoder.norm.eps == 1e-5
    ff = attn.blocks.FeedForward(8, 16)
    assert ff.activation == "relu" and ff.linear1.bias is not None and ff.dropout.p == 0.0
    assert attn.blocks.FeedForward(8, 16, activation=torch.tanh).activation is None  # a name only when it has one
    with pytest.raises(ValueError) as e:
        attn.blocks.FeedForward(0, 16)
    assert str(e.value) == "d_model must be a positive integer, got 0"


def test_transformer_passes_every_option_to_every_layer_and_norm():
    model = Transformer(8, 2, 2, 2, 16, dropout=0.3, activation="gelu", norm_first=True, eps=1e-3, bias=False)
    for stack in (model.encoder, model.decoder):
        assert stack.norm.eps == 1e-3 and stack.norm.bias is None
        for layer in stack.layers:
            assert layer.ff.linear1.out_features == 16 and layer.ff.activation == "gelu"
            assert layer.norm_first is True and layer.norm1.eps == 1e-3 and layer.norm1.bias is None
            assert layer.self_attn.in_proj.bias is None and layer.self_attn.dropout == 0.3
            assert layer.ff.dropout.p == 0.3 and layer.dropout1.p == 0.3
    dec = model.decoder.layers[0]
    assert dec.cross_attn.dropout == 0.3 and dec.cross_attn.in_proj.bias is None
    pos = attn.ALiBi(2)
    layer = DecoderLayer(8, 2, positional=pos)
    assert layer.self_attn.positional is pos and layer.cross_attn.positional is None


def test_every_mask_reaches_its_attention_through_the_stacks():
    """nn.Transformer with a source mask, a causal target mask and both padding masks."""
    torch.manual_seed(0)
    ref = nn.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=48, dropout=0.0,
                         batch_first=True)
    ours = Transformer.from_torch(ref)
    assert ours.encoder.layers[0].ff.linear1.out_features == 48 and len(ours.encoder.layers) == 2
    assert len(ours.decoder.layers) == 1
    _both_train_without_dropout(ref, ours)
    src, tgt = torch.randn(2, 6, D), torch.randn(2, 5, D)
    src_keys, tgt_keys = masks.padding([6, 4])[:, 0], masks.padding([5, 3])[:, 0]
    src_mask = masks.sliding_window(6, window=1)
    expected = ref(src, tgt, src_mask=~src_mask, tgt_mask=~masks.causal(5), src_key_padding_mask=~src_keys,
                   tgt_key_padding_mask=~tgt_keys, memory_key_padding_mask=~src_keys)
    got = ours(src, tgt, src_mask=src_mask, src_key_mask=src_keys, tgt_key_mask=tgt_keys)
    assert_close(got[tgt_keys], expected[tgt_keys], **TOL)
    tgt_mask = masks.sliding_window(5, window=1, is_causal=True)  # tgt_mask replaces the causal default
    expected = ref(src, tgt, src_mask=~src_mask, tgt_mask=~tgt_mask, src_key_padding_mask=~src_keys,
                   memory_key_padding_mask=~src_keys)
    assert_close(ours(src, tgt, src_mask=src_mask, tgt_mask=tgt_mask, src_key_mask=src_keys, tgt_is_causal=False),
                 expected, **TOL)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layers_decode_with_a_cache_and_take_is_causal(norm_first):
    torch.manual_seed(0)
    enc = attn.blocks.Encoder(EncoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first), 2, nn.LayerNorm(D)).eval()
    x = torch.randn(2, 6, D)
    with torch.no_grad():
        full = enc(x, is_causal=True)
        assert_close(full, enc(x, mask=masks.causal(6)), **TOL)
        assert not torch.allclose(full, enc(x), **TOL)
        caches = [attn.KVCache() for _ in enc.layers]
        steps = []
        for t in range(6):
            h = x[:, t:t + 1]
            for layer, cache in zip(enc.layers, caches, strict=True):
                h = layer(h, is_causal=True, cache=cache)
            steps.append(enc.norm(h))
    assert_close(torch.cat(steps, 1), full, **TOL)


def test_cached_decoding_keeps_memory_masks_and_projects_memory_once():
    torch.manual_seed(0)
    dec = Decoder(DecoderLayer(D, H, FF, dropout=0.0), 2, nn.LayerNorm(D)).eval()
    x, memory = torch.randn(2, 5, D), torch.randn(2, 4, D)
    mem_keys = masks.padding([4, 2])[:, 0]
    with torch.no_grad():
        full = dec(x, memory, memory_key_mask=mem_keys)
        caches = dec.new_caches()
        steps = [dec(x[:, t:t + 1], memory, memory_key_mask=mem_keys, caches=caches) for t in range(5)]
    assert_close(torch.cat(steps, 1), full, **TOL)
    assert all(len(cross) == 4 for _, cross in caches)  # the memory's keys once, not once per step


def test_copies_from_torch_share_no_module_with_the_original():
    ref = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU(), batch_first=True), 1,
                                norm=nn.LayerNorm(8))
    ours = attn.blocks.Encoder.from_torch(ref)
    assert ours.norm is not ref.norm and ours.layers[0].ff._act is not ref.layers[0].activation
    mixed = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    mixed.linear1 = nn.Linear(8, 16, bias=False)
    with pytest.raises(ValueError) as e:
        EncoderLayer.from_torch(mixed)
    assert str(e.value) == ("the PyTorch layer mixes parts with and without biases (linear1, linear2, norm1, self_attn: "
                            "[False, True, True, True]); only layers built with one bias= setting can be copied")


def test_decoder_masks_reach_both_attentions_and_left_padding_counts():
    """Left padding of the target (a padded key before real queries) and a memory mask: both must
    reach their attention; with right padding and a causal mask a lost key mask would not show."""
    torch.manual_seed(0)
    ref = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True), 2)
    ours = Decoder.from_torch(ref)
    _both_train_without_dropout(ref, ours)
    x, memory = torch.randn(2, 5, D), torch.randn(2, 4, D)
    tgt_keys = torch.tensor([[True] * 5, [False, True, True, True, True]])
    memory_mask = masks.sliding_window(5, 4, window=2)  # (L, S): each query sees nearby memory only
    expected = ref(x, memory, tgt_mask=~masks.causal(5), memory_mask=~memory_mask, tgt_key_padding_mask=~tgt_keys)
    got = ours(x, memory, key_mask=tgt_keys, memory_mask=memory_mask, is_causal=True)
    assert_close(got[tgt_keys], expected[tgt_keys], **TOL)
    model = Transformer.from_torch(nn.Transformer(D, H, 1, 1, FF, dropout=0.0, batch_first=True))
    model.train()
    src = torch.randn(2, 4, D)
    with_mask = model(src, x, tgt_key_mask=tgt_keys)
    assert not torch.allclose(with_mask[tgt_keys], model(src, x)[tgt_keys], **TOL)
    window = masks.sliding_window(5, window=2)  # not causal: tgt_is_causal=False must keep it so
    assert not torch.allclose(model(src, x, tgt_mask=window, tgt_is_causal=False),
                              model(src, x, tgt_mask=window & masks.causal(5), tgt_is_causal=False), **TOL)


def test_stacks_without_a_final_norm_and_copies_keep_eps_and_own_their_norms():
    enc = attn.blocks.Encoder(EncoderLayer(8, 2, 16, dropout=0.0), 2)  # no final norm
    assert enc.norm is None and enc(torch.randn(1, 3, 8)).shape == (1, 3, 8)
    layer = EncoderLayer.from_torch(nn.TransformerEncoderLayer(8, 2, 16, layer_norm_eps=1e-3, batch_first=True))
    assert layer.norm1.eps == 1e-3 and layer.norm2.eps == 1e-3
    ref = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1, norm=nn.LayerNorm(8))
    ours = attn.blocks.Encoder.from_torch(ref)
    assert ours.norm.weight.data_ptr() != ref.norm.weight.data_ptr()  # a copy, not shared parameters


@pytest.mark.parametrize("norm_first", [True, False])
def test_attention_only_layer_is_the_encoder_layer_without_its_feed_forward(norm_first):
    """x + MHA(LN(x)) (pre-LN) or LN(x + MHA(x)) (post-LN), and a TokenModel with d_ff=0 is built of
    such layers (the induction-heads chapter's models)."""
    torch.manual_seed(0)
    layer = AttentionOnlyLayer(16, 4, dropout=0.0, norm_first=norm_first).eval()
    assert layer.ff is None and layer.norm2 is None and isinstance(layer, EncoderLayer)
    assert sum(p.numel() for p in layer.parameters()) == 4 * 16 * 16 + 4 * 16 + 2 * 16  # Q, K, V, O (+ biases), LN
    x = torch.randn(2, 5, 16)
    mha = lambda h: layer.self_attn(h, is_causal=True)[0]  # noqa: E731
    want = x + mha(layer.norm1(x)) if norm_first else layer.norm1(x + mha(x))
    assert_close(layer(x, is_causal=True), want)
    full = EncoderLayer(16, 4, 8, dropout=0.0, norm_first=norm_first).eval()
    with torch.no_grad():  # the same layer with its feed-forward's output zeroed: equal when pre-LN
        full.self_attn.load_state_dict(layer.self_attn.state_dict())
        full.norm1.load_state_dict(layer.norm1.state_dict())
        full.ff.linear2.weight.zero_()
        full.ff.linear2.bias.zero_()
    if norm_first:
        assert_close(full(x, is_causal=True), want)
    model = TokenModel(7, 16, 4, num_layers=2, d_ff=0, is_causal=True)
    assert all(type(layer) is AttentionOnlyLayer for layer in model.layers)
    assert all(layer.ff.linear1.out_features == 64 for layer in TokenModel(7, 16, 4).layers)  # default 4 D
