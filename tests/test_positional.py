"""attn.positional against the formula of Vaswani et al. (2017)."""

import math

import pytest
import torch
from torch.testing import assert_close

import attn
from attn.positional import sinusoidal_table


def test_table_matches_the_formula_elementwise():
    d, n = 10, 50
    pe = sinusoidal_table(n, d)
    for pos in (0, 1, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert math.isclose(pe[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-6)
            assert math.isclose(pe[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-6)


def test_values_are_bounded_and_odd_widths_work():
    pe = sinusoidal_table(1000, 7)
    assert pe.shape == (1000, 7) and pe.abs().max() <= 1.0
    pos = torch.arange(1000, dtype=torch.float64)
    assert_close(pe[:, 6], torch.sin(pos / 10000 ** (6 / 7)).float())  # the unpaired last column is a sine


def test_module_adds_the_table_with_offset():
    m = attn.SinusoidalPositionalEncoding(8, max_len=20)
    x = torch.zeros(2, 5, 8)
    assert_close(m(x), m.pe[:5].expand(2, 5, 8))
    assert_close(m(x, offset=3), m.pe[3:8].expand(2, 5, 8))


def test_sequence_longer_than_table_is_a_clear_error():
    m = attn.SinusoidalPositionalEncoding(8, max_len=16)
    with pytest.raises(ValueError, match=r"sequence length 17 \(shape \(1, 17, 8\)\).*max_len=16"):
        m(torch.zeros(1, 17, 8))
    with pytest.raises(ValueError, match=r"x has last dimension 4 \(shape \(1, 3, 4\)\), expected 8"):
        m(torch.zeros(1, 3, 4))
    with pytest.raises(ValueError, match="max_len >= 20"):
        m.encoding(5, offset=15)


def test_table_is_not_saved_in_state_dict():
    assert "pe" not in attn.SinusoidalPositionalEncoding(8, max_len=16).state_dict()
