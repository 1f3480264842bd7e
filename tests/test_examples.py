"""The worked example's numbers are what the chapters print and a reader checks by hand."""

import torch

import attn
from attn.book.examples import worked_example


def test_worked_example_has_whole_number_scores_and_matches_attn():
    ex = worked_example()
    X, W_Q, W_K, W_V = ex["X"], ex["W_Q"], ex["W_K"], ex["W_V"]
    assert len(ex["tokens"]) == X.shape[0] == 3 and X.shape[1] == W_Q.shape[0] == 4
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T
    torch.testing.assert_close(scores, torch.tensor([[3.0, 10, 8], [8, 8, 12], [7, 14, 14]]))
    weights = torch.softmax(scores / 2, dim=-1)  # d_k = 4: the scale is a half
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))
    assert weights[2, 1] == weights[2, 2]  # equal scores, equal weights
    out = attn.scaled_dot_product_attention(Q[None], K[None], V[None])[0]
    torch.testing.assert_close(out, weights @ V)


def test_worked_example_returns_fresh_copies():
    a, b = worked_example(), worked_example()
    a["X"][0, 0] = 99
    assert b["X"][0, 0] == 1 and worked_example()["X"][0, 0] == 1
