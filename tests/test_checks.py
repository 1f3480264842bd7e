"""attn._checks: the one home of the package's argument checks. Each error names the argument, what it
got and what it needs, and a bool is never taken for a number (``True == 1`` in Python)."""

import math

import pytest
import torch

from attn import _checks


def _message(call) -> str:
    with pytest.raises(ValueError) as e:
        call()
    return str(e.value)


@pytest.mark.parametrize("check", [_checks.positive_int, _checks.non_negative_int, _checks.integer,
                                   _checks.positive_number, _checks.number, _checks.probability])
@pytest.mark.parametrize("value", [True, False])
def test_a_bool_is_not_a_number_for_any_check(check, value):
    assert _message(lambda: check("n", value)).endswith(f"got {value}")


def test_integer_names_the_range_it_needs_and_what_was_wrong():
    assert _checks.integer("prefix", 4, 0, 4) == 4
    assert _message(lambda: _checks.integer("prefix", 5, 0, 4, high_name="L")) == "prefix must lie in [0, L=4], got 5"
    assert _message(lambda: _checks.integer("prefix", 2.0, 0, 4, high_name="L")) == (
        "prefix must be an integer in [0, L=4], got 2.0")
    assert _message(lambda: _checks.integer("q", 3, 0, 3, bounds="[)", what=" (a query)")) == (
        "q must lie in [0, 3) (a query), got 3")
    assert _checks.integer("layer", -2, -2, 2, bounds="[)") == -2  # negative indices from the end
    assert _message(lambda: _checks.integer("length", 3, 4)) == "length must be at least 4, got 3"
    assert _message(lambda: _checks.integer("length", "8", 4)) == "length must be an integer, at least 4, got '8'"
    assert _message(lambda: _checks.integer("top", 6, high=5)) == "top must be at most 5, got 6"
    assert _message(lambda: _checks.integer("offset", 0.5)) == "offset must be an integer, got 0.5"
    assert _checks.integer("offset", -7) == -7  # no bound: any int


def test_number_takes_finite_ints_and_floats_between_its_bounds():
    assert _checks.number("p", 1, 0, 1, bounds="(]") == 1
    assert _message(lambda: _checks.number("p", 0.0, 0, 1, bounds="(]")) == "p must lie in (0, 1], got 0.0"
    assert _message(lambda: _checks.number("t", -1, 0)) == "t must be at least 0, got -1"
    assert _message(lambda: _checks.number("t", 0, 0, bounds="()")) == "t must be more than 0, got 0"
    for bad in (math.inf, math.nan, "1", None):
        assert _message(lambda bad=bad: _checks.number("t", bad, 0)) == f"t must be a number, at least 0, got {bad!r}"


def test_probability_is_in_zero_to_one_with_one_left_out():
    assert _checks.probability("dropout_p", 0) == 0 and _checks.probability("dropout_p", 0.999) == 0.999
    assert _message(lambda: _checks.probability("dropout_p", 1.0)) == "dropout_p must lie in [0, 1), got 1.0"


def test_boolean_takes_true_and_false_only():
    assert _checks.boolean("use_cache", True) is True and _checks.boolean("use_cache", False) is False
    for bad in (1, 0, "no", None):
        assert _message(lambda bad=bad: _checks.boolean("use_cache", bad)) == f"use_cache must be True or False, got {bad!r}"


def test_entries_checks_every_entry_and_shows_a_few_or_their_range():
    ok = torch.tensor([0, 3])
    assert _checks.entries("lengths", ok, 0, 3) is ok
    assert _checks.entries("lengths", torch.zeros(0, dtype=torch.long), 0, 3).numel() == 0
    assert _message(lambda: _checks.entries("lengths", torch.tensor([2, 4]), 0, 3, high_name="S")) == (
        "lengths must lie in [0, S=3], got [2, 4]")
    assert _message(lambda: _checks.entries("ids", torch.arange(-1, 19), 0, 10, bounds="[)", what=" (ids)")) == (
        "ids must lie in [0, 10) (ids), got entries from -1 to 18")


def test_divisible_says_what_divides_what_and_returns_the_quotient():
    assert _checks.divisible("d_model", 12, 4, by_name="num_heads") == 3
    assert _message(lambda: _checks.divisible("d_model", 30, 4, by_name="num_heads")) == (
        "d_model (30) must be divisible by num_heads (4)")
    assert _message(lambda: _checks.divisible("d_head", 7, 2, why=" (pairs)")) == "d_head must be even (pairs), got d_head=7"
    assert _message(lambda: _checks.divisible("d_model", 6, 4)) == "d_model must be a multiple of 4, got d_model=6"


def test_heads_is_the_one_heads_rule_and_returns_the_head_width():
    assert _checks.heads(12, 4) == 3
    assert _message(lambda: _checks.heads(10, 3)) == (
        "d_model (10) must be divisible by num_heads (3): each head gets d_model / num_heads = 3.33333 dimensions, "
        "which is not an integer")
    assert _message(lambda: _checks.heads(10, 3, names=("D", "H"))).startswith("D (10) must be divisible by H (3)")
    assert _message(lambda: _checks.heads(8, True)) == "num_heads must be a positive integer, got True"
    assert _message(lambda: _checks.heads(0, 0)) == "num_heads must be a positive integer, got 0"  # heads first
    assert _message(lambda: _checks.heads(8.0, 2)) == "d_model must be a positive integer, got 8.0"


def test_a_range_check_refuses_bounds_it_does_not_know():
    assert _message(lambda: _checks.integer("n", 5, 0, 4, bounds="[[")) == "bounds must be one of '[]', '[)', '(]', '()', got '[['"
