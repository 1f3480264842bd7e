"""attn.measure: FLOPs counted exactly, the ATen operators a call runs, times that are times.

(The memory meter's tests are in tests/test_import.py, beside the first timer test.)"""

import math
import time

import pytest
import torch
import torch.nn.functional as F

import attn.measure


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 5, 7), (64, 32, 16)])
def test_flops_of_a_matrix_product_are_two_m_n_k_exactly(m, k, n):
    a, b = torch.randn(m, k), torch.randn(k, n)
    assert attn.measure.flops(torch.mm, a, b) == 2 * m * n * k
    assert attn.measure.flops(lambda: a @ b) == 2 * m * n * k


def test_flops_of_a_batched_product_and_its_backward_count_every_product():
    a = torch.randn(4, 3, 5, requires_grad=True)
    b = torch.randn(4, 5, 2)
    forward = 2 * 4 * 3 * 5 * 2
    assert attn.measure.flops(torch.bmm, a, b) == forward
    assert attn.measure.flops(lambda: torch.bmm(a, b).sum().backward()) == 2 * forward  # + grad of a


def test_flops_passes_keyword_arguments_to_the_call():
    x, w = torch.randn(2, 8), torch.randn(4, 8)
    assert attn.measure.flops(F.linear, x, weight=w) == 2 * 2 * 4 * 8


def test_flops_of_element_wise_work_are_zero():
    assert attn.measure.flops(torch.softmax, torch.randn(8, 8), -1) == 0


def test_operators_sees_bmm_for_a_batched_product():
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    assert attn.measure.operators(torch.bmm, a, b) == ["bmm"]


def test_operators_sees_the_fused_cpu_kernel_of_sdpa_and_the_math_path_with_dropout():
    q, k, v = (torch.randn(1, 2, 8, 4) for _ in range(3))
    fused = attn.measure.operators(F.scaled_dot_product_attention, q, k, v)
    assert "_scaled_dot_product_flash_attention_for_cpu" in fused and "bmm" not in fused
    torch.manual_seed(0)
    with_dropout = attn.measure.operators(F.scaled_dot_product_attention, q, k, v, dropout_p=0.5)
    assert not any(op.startswith("_scaled_dot_product_flash") for op in with_dropout)
    assert with_dropout.count("bmm") == 2 and "_safe_softmax" in with_dropout  # the math path


def test_operators_records_in_call_order_and_returns_nothing_else():
    x = torch.randn(3, 3)
    ops = attn.measure.operators(lambda: (x @ x).relu().sum())
    assert ops == ["mm", "relu", "sum"]


def test_seconds_is_positive_and_finite_for_a_statement_and_a_function():
    t_stmt = attn.measure.seconds("x.sum()", x=torch.ones(100), min_run_time=0.01)
    t_fn = attn.measure.seconds(lambda: torch.ones(100).sum(), min_run_time=0.01)
    t_once = attn.measure.seconds(lambda: None, min_run_time=0)
    for t in (t_stmt, t_fn, t_once):
        assert 0 < t < 1 and math.isfinite(t)


def test_seconds_measures_the_sleep_it_is_given_on_the_wall_clock_not_the_process_clock():
    wall = attn.measure.seconds(lambda: time.sleep(0.02), min_run_time=0)
    cpu = attn.measure.seconds(lambda: time.sleep(0.02), min_run_time=0, clock="process")
    assert 0.02 <= wall < 1 and cpu < 0.01  # sleeping costs no processor time


def test_compare_times_each_call_side_by_side_and_orders_them():
    calls = {"slow": "sum(range(200_000))", "fast": lambda: sum(range(2_000))}
    t = attn.measure.compare(calls, rounds=2, min_run_time=0.02)
    assert list(t) == ["slow", "fast"] and 0 < t["fast"] < t["slow"]  # 100x the work
    best = attn.measure.compare({"n": "sum(range(n))"}, rounds=3, min_run_time=0, summary=min, n=10)
    assert 0 < best["n"] < 1


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="clock must be one of"):
        attn.measure.seconds("pass", clock="cpu")
    with pytest.raises(ValueError, match=r"min_run_time must be at least 0 seconds \(0: one warm-up and one timed run\), got -1"):
        attn.measure.seconds("pass", min_run_time=-1)
    with pytest.raises(ValueError, match=r"min_run_time must be a number, at least 0 seconds .*got True"):
        attn.measure.seconds("pass", min_run_time=True)
    with pytest.raises(ValueError, match="rounds must be a positive integer, got 0"):
        attn.measure.compare({"a": "pass"}, rounds=0)
    with pytest.raises(ValueError, match="rounds must be a positive integer, got True"):
        attn.measure.compare({"a": "pass"}, rounds=True)
    with pytest.raises(ValueError, match="calls must name"):
        attn.measure.compare({})


def test_stopwatch_times_a_block_once_on_the_clock_it_is_given():
    with attn.measure.stopwatch() as wall, attn.measure.stopwatch("process") as cpu:
        assert math.isnan(wall.seconds)  # not over yet
        time.sleep(0.02)
    assert 0.02 <= wall.seconds < 1 and 0 <= cpu.seconds < 0.01
    with pytest.raises(ValueError, match="clock must be one of"):
        attn.measure.stopwatch("cpu")


def test_threads_sets_the_thread_count_for_the_measurement_only():
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # (the parallel test workers run with one: tests/conftest.py)
    try:
        seen = []
        attn.measure.compare({"a": lambda: seen.append(torch.get_num_threads())}, rounds=2, min_run_time=0, threads=1)
        assert set(seen) == {1} and torch.get_num_threads() == 2
        attn.measure.seconds(lambda: seen.append(torch.get_num_threads()), min_run_time=0)
        assert seen[-1] == 2  # the default: torch's current count
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        attn.measure.seconds("pass", threads=0)


# --- multi-head and causal chapters: counting, not timing ------------------------------------------
def test_matrix_products_counts_linear_layers_and_batched_products_only():
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 3, 4)
    assert attn.measure.matrix_products(lin, x[0]) == 1  # addmm
    assert attn.measure.matrix_products(lambda: (x @ x.transpose(1, 2)).softmax(-1) @ x) == 2  # bmm twice
    assert attn.measure.matrix_products(lambda: (x * 2).relu().sum()) == 0


def test_input_elements_sums_every_call_and_removes_its_hook():
    emb = torch.nn.Embedding(10, 3)
    ids = torch.tensor([[1, 2, 3]])

    def three_calls():
        for t in range(3):
            emb(ids[:, : t + 1])

    assert attn.measure.input_elements(emb, three_calls) == 1 + 2 + 3
    assert not emb._forward_pre_hooks
    with pytest.raises(ZeroDivisionError):
        attn.measure.input_elements(emb, lambda: (emb(ids), 1 / 0))
    assert not emb._forward_pre_hooks  # removed even when fn raises
