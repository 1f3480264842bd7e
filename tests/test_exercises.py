"""attn.exercises: each checker accepts a correct answer and rejects the classic wrong ones with a reason."""

import math

import torch

from attn import exercises, masks
from attn.positional import sinusoidal_table


def reference_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return w @ v


def test_correct_attention_passes_and_the_verdict_reads_well():
    v = exercises.check_attention(reference_attention)
    assert v, repr(v)
    assert repr(v).startswith("scaled dot-product attention: correct (5/5 cases pass)")
    assert "<table>" in v._repr_html_()


def test_attention_without_the_scale_fails_with_numbers():
    # no 1/sqrt(E): the same as scaling q up by sqrt(E) before the correct function
    v = exercises.check_attention(lambda q, k, v_, mask=None: reference_attention(q * math.sqrt(q.shape[-1]), k, v_, mask))
    assert not v
    assert "FAIL" in repr(v) and "not yet" in repr(v)


def test_attention_that_gives_nan_on_a_fully_masked_row_fails_that_case_only():
    def nan_rows(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, -1) @ v

    v = exercises.check_attention(nan_rows)
    failed = [case for case, ok, _ in v.cases if not ok]
    assert failed == ["a fully masked row gives zeros, not NaN"]


def test_a_checker_reports_an_exception_instead_of_raising():
    v = exercises.check_causal_mask(lambda _n: 1 / 0)
    assert not v and "ZeroDivisionError" in repr(v)


def test_mask_checkers_accept_the_answer_and_reject_the_inverted_convention():
    assert exercises.check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).tril())
    inverted = exercises.check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).triu(1))
    assert not inverted and "entries differ" in repr(inverted)
    assert not exercises.check_causal_mask(lambda n: torch.ones(n, n).tril())  # float, not bool
    ok = exercises.check_padding_mask(lambda lengths, S: torch.arange(S) < torch.tensor(lengths)[:, None])
    assert ok, repr(ok)
    assert not exercises.check_padding_mask(lambda lengths, S: torch.arange(S) >= torch.tensor(lengths)[:, None])


def test_table_and_head_split_checkers():
    assert exercises.check_sinusoidal_table(sinusoidal_table)
    swapped = exercises.check_sinusoidal_table(lambda n, d: sinusoidal_table(n, d).flip(-1))
    assert not swapped
    assert exercises.check_split_heads(lambda x, h: x.view(*x.shape[:2], h, -1).transpose(1, 2))
    bare = exercises.check_split_heads(lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1))
    assert not bare, "a reshape without the transpose mixes positions into heads"
    assert masks.causal(3).dtype == torch.bool


def test_every_checker_named_in_a_chapter_exists_and_the_chapters_solutions_pass_it():
    """The solutions in the chapters' dropdowns that call a checker run, and the checker accepts them."""
    import json
    import re

    from scripts import notebooks

    import attn

    used = set()
    for path in notebooks.chapters():
        nb = json.loads(path.read_text())
        text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        for block in re.findall(r":::\{dropdown\} Solution\n(.*?)\n:::", text, flags=re.S):
            for code in re.findall(r"```python\n(.*?)```", block, flags=re.S):
                if "attn.exercises.check_" in code:
                    used |= set(re.findall(r"attn\.exercises\.(check_\w+)", code))
                    exec(compile(code, f"{path.name}: solution", "exec"),
                         {"attn": attn, "torch": torch, "math": math})
    assert used == {n for n in exercises.__all__ if n.startswith("check_")}, "every checker is used by a chapter"
