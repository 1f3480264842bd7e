"""Bad input raises ValueError/TypeError naming the argument, what it got and what it needs.

One row per case of issue 9, item 7 (KVCache.update's head width is tested with the cache). Each
row is a call that was silent (wrong numbers) or raised a raw torch error before, the exception
type, and a pattern that the message must match: the argument's name, the value or shape received
and what was expected.
"""

import pytest
import torch

import attn
from attn import masks
from attn.book import data, viz
from attn.blocks import Decoder, DecoderLayer, Encoder, EncoderLayer
from attn.models import TokenModel


def _mha(x):
    return attn.MultiHeadAttention(16, 4)(x)


def _token_model(tokens):
    return TokenModel(10, d_model=16, num_heads=2, num_layers=1)(tokens)


def _generate(max_new_tokens):
    lm = TokenModel(10, d_model=16, num_heads=2, num_layers=1, is_causal=True, max_len=32)
    return lm.generate(torch.tensor([[1, 2, 3]]), max_new_tokens)


CASES = {
    # positional encodings
    "sinusoidal_integer_input": (
        lambda: attn.SinusoidalPositionalEncoding(8)(torch.ones(2, 3, 8, dtype=torch.long)),
        TypeError, r"x must be a floating-point tensor, got dtype torch.int64"),
    "learned_integer_input": (
        lambda: attn.LearnedPositionalEncoding(8, 16)(torch.ones(2, 3, 8, dtype=torch.int32)),
        TypeError, r"x must be a floating-point tensor, got dtype torch.int32"),
    "sinusoidal_table_base_zero": (
        lambda: attn.positional.sinusoidal_table(8, 4, base=0.0),
        ValueError, r"base must be a positive number.*got 0\.0"),
    "sinusoidal_module_negative_base": (
        lambda: attn.SinusoidalPositionalEncoding(8, base=-10000.0),
        ValueError, r"base must be a positive number.*got -10000\.0"),
    "sinusoidal_2d_base_zero": (
        lambda: attn.positional.Sinusoidal2DPositionalEncoding(8, 2, 2, base=0),
        ValueError, r"base must be a positive number.*got 0"),
    "rope_negative_base": (
        lambda: attn.RotaryPositionalEncoding(8, base=-1.0),
        ValueError, r"base must be a positive number.*got -1\.0"),
    # blocks
    "encoder_negative_layers": (
        lambda: Encoder(EncoderLayer(16, 2, 32), -1),
        ValueError, r"num_layers must be a positive integer, got -1"),
    "decoder_zero_layers": (
        lambda: Decoder(DecoderLayer(16, 2, 32), 0),
        ValueError, r"num_layers must be a positive integer, got 0"),
    "encoder_layer_negative_d_ff": (
        lambda: EncoderLayer(16, 2, d_ff=-1),
        ValueError, r"d_ff must be a positive integer, got -1"),
    "decoder_layer_zero_d_ff": (
        lambda: DecoderLayer(16, 2, d_ff=0),
        ValueError, r"d_ff must be a positive integer, got 0"),
    # data
    "kv_recall_more_queries_than_keys": (
        lambda: data.KVRecall(num_keys=4, num_queries=6),
        ValueError, r"num_queries \(6\) must not exceed num_keys \(4\)"),
    "kv_sum_more_queries_than_keys": (
        lambda: data.kv_sum(3, data.KVRecall(num_keys=2, num_values=4, num_queries=5)),
        ValueError, r"num_queries \(5\) must not exceed num_keys \(2\)"),
    "kv_recall_negative_n": (
        lambda: data.kv_recall(-1),
        ValueError, r"n must be a positive integer \(the number of sequences\), got -1"),
    "kv_sum_zero_n": (
        lambda: data.kv_sum(0),
        ValueError, r"n must be a positive integer \(the number of sequences\), got 0"),
    # models
    "generate_negative_max_new_tokens": (
        lambda: _generate(-3),
        ValueError, r"max_new_tokens must be a non-negative integer, got -3"),
    "token_model_float_ids": (
        lambda: _token_model(torch.ones(2, 5)),
        TypeError, r"tokens must hold integer token ids, got dtype torch.float32"),
    "token_model_id_too_large": (
        lambda: _token_model(torch.tensor([[1, 2, 10]])),
        ValueError, r"tokens must lie in \[0, vocab_size=10\), got ids from 1 to 10"),
    "token_model_negative_id": (
        lambda: _token_model(torch.tensor([[-1, 2, 3]])),
        ValueError, r"tokens must lie in \[0, vocab_size=10\), got ids from -1 to 3"),
    # masks
    "combine_shapes_that_do_not_broadcast": (
        lambda: masks.combine(masks.causal(4), masks.causal(3)),
        ValueError, r"combine\(\) got masks of shapes \(4, 4\) and \(3, 3\), which do not broadcast"),
    # attention
    "mha_integer_input": (
        lambda: _mha(torch.ones(2, 3, 16, dtype=torch.long)),
        TypeError, r"query must be a floating-point tensor, got dtype torch.int64"),
    "mha_dtype_other_than_parameters": (
        lambda: _mha(torch.randn(2, 3, 16, dtype=torch.float64)),
        TypeError, (r"query has dtype torch.float64 but the parameters of this MultiHeadAttention are "
                    r"torch.float32")),
    "mha_empty_query": (
        lambda: _mha(torch.randn(2, 0, 16)),
        ValueError, r"query has an empty query length L dimension \(shape \(2, 0, 16\)\)"),
    "mha_empty_memory": (
        lambda: attn.MultiHeadAttention(16, 2)(torch.randn(2, 3, 16), torch.randn(2, 0, 16)),
        ValueError, r"key has an empty source length S dimension \(shape \(2, 0, 16\)\)"),
    # viz
    "heatmaps_zero_maps": (
        lambda: viz.heatmaps(torch.zeros(0, 3, 3)),
        ValueError, r"matrices holds no maps \(shape \(0, 3, 3\)\); need at least one"),
    "heatmaps_too_few_titles": (
        lambda: viz.heatmaps(torch.rand(3, 2, 2), titles=["a", "b"]),
        ValueError, r"titles has 2 entries but matrices holds 3 maps"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_raises_a_clear_error(case):
    call, error, pattern = CASES[case]
    with pytest.raises(error, match=pattern):
        call()
