"""Claims of the chapter book/induction_heads.ipynb that are maths, not measurements: the scores of the pencil
example's 0/1 patterns, of the duplicate-token head of exercise 1, and of uniform causal attention (the level
the chapter compares the previous-token scores with), each against a count done by hand."""

import pytest
import torch

from attn.book import induction_heads as ih


def _pattern(L: int, key) -> torch.Tensor:
    """A 0/1 pattern (L, L): row i has its one at key(i)."""
    A = torch.zeros(L, L)
    for i in range(L):
        A[i, key(i)] = 1
    return A


@pytest.mark.parametrize(("name", "key", "expected"), [
    ("previous-token", lambda i, _n: max(i - 1, 0), (1.0, 0.0)),
    ("induction", lambda i, n: i - n + 1 if i >= n else 0, (0.25, 1.0)),
    ("duplicate-token", lambda i, n: i - n if i >= n else 0, (0.25, 0.0)),
])
def test_the_pencil_patterns_on_q_x_m_q_x_score_as_counted_by_hand(name, key, expected):
    n, L = 3, 5  # "q x m q x": rows 1-4 count for the previous-token score, rows 3-4 for induction
    A = _pattern(L, lambda i: key(i, n))
    prev, ind = ih.scores_from_weights(A[None, None], torch.tensor([n]))
    assert (prev.item(), ind.item()) == expected, name


def test_uniform_causal_attention_scores_the_mean_of_one_over_i_plus_one():
    L, n = 40, 10
    A = torch.tril(torch.ones(L, L))
    A = A / A.sum(-1, keepdim=True)  # query i spreads over its i + 1 keys
    prev, ind = ih.scores_from_weights(A[None, None], torch.tensor([n]))
    by_hand = sum(1 / (i + 1) for i in range(1, L)) / (L - 1)  # weight 1/(i+1) on key i - 1
    assert prev.item() == pytest.approx(by_hand, rel=1e-6)
    # the induction keys i - n + 1, i - 2n + 1, ... >= 1: one weight 1/(i+1) per earlier copy
    copies = [sum(1 for m in range(1, L) if i - m * n + 1 >= 1) / (i + 1) for i in range(n, L)]
    assert ind.item() == pytest.approx(sum(copies) / len(copies), rel=1e-6)
