"""Independent pieces of stored float64 work use the cores and keep their digits
(``cflbounds._threads.on_one_thread_each``).

The certificate computes on one torch thread so that its stored numbers do not follow the thread
count (``one_torch_thread``); ``on_one_thread_each`` gives the cores back by running independent
items at once, each on one thread. What is checked: the items run concurrently when the caller
has two threads (a barrier both must reach), each on one torch thread, in order and serially
when the caller has one, nested calls stay serial, errors reach the caller, the caller's count
comes back; and the early-exit certificate's numbers (Gram matrices, quadratics, spectral norms,
residuals, one model's or several at once) are bitwise the same on one thread and on two.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import cflbounds._threads as threads_module
from cflbounds._threads import PARALLEL_FLOPS, on_one_thread_each, one_torch_thread
from cflbounds.sweeps.cluster_quadratics import ClusterQuadratics


def test_items_run_at_once_each_on_one_torch_thread(two_threads):
    barrier = threading.Barrier(2, timeout=60)  # a serial run would wait here for a second item that never comes

    def item(value):
        barrier.wait()
        return value * 10, torch.get_num_threads(), threading.current_thread().name

    results = on_one_thread_each(item, [1, 2])
    assert [value for value, _, _ in results] == [10, 20]
    assert {count for _, count, _ in results} == {1}
    assert len({name for _, _, name in results}) == 2
    assert torch.get_num_threads() == 2


def test_the_caller_count_outside_one_torch_thread_decides(two_threads):
    with one_torch_thread():
        assert torch.get_num_threads() == 1
        names = on_one_thread_each(lambda _: threading.current_thread().name, range(4))
        assert torch.get_num_threads() == 1
    assert threading.current_thread().name not in names
    assert torch.get_num_threads() == 2


def test_one_thread_runs_the_items_in_order_on_the_caller():
    torch.set_num_threads(1)
    order = []
    results = on_one_thread_each(lambda value: order.append(value) or threading.current_thread().name, [3, 1, 2])
    assert order == [3, 1, 2]
    assert set(results) == {threading.current_thread().name}


def test_nested_calls_run_in_the_item_thread(two_threads):
    def item(value):
        outer = threading.current_thread().name
        inner = on_one_thread_each(lambda _: threading.current_thread().name, range(3))
        return outer, inner

    for outer, inner in on_one_thread_each(item, range(2)):
        assert inner == [outer] * 3


def test_an_item_error_reaches_the_caller(two_threads):
    def item(value):
        if value == 1:
            raise ValueError("item 1")
        return value

    with pytest.raises(ValueError, match="item 1"):
        on_one_thread_each(item, range(3))
    assert torch.get_num_threads() == 2


def _certificate_numbers(threads: int) -> list[np.ndarray]:
    """A float32 problem's quadratics (true clusters, a mixed set), spectral norms and residuals,
    computed with torch at ``threads`` threads."""
    rng = np.random.default_rng(3)
    m, n, d = 12, 40, 30
    x = torch.as_tensor(rng.standard_normal((m, n, d)), dtype=torch.float32)
    y = torch.as_tensor(rng.standard_normal((m, n)), dtype=torch.float32)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        quadratics = ClusterQuadratics(x, y, np.arange(m) % 2, 2.0 / n / m)
        masks = [np.arange(m) % 2 == 0, np.arange(m) % 2 == 1, np.arange(m) < 7]
        factors = quadratics.contractions(masks, 0.5)
        solved = [quadratics.quadratic(mask) for mask in masks]
        model = torch.as_tensor(rng.standard_normal(d))
        idle = rng.standard_normal((3, d))
        quadratics.remember_residual_norms(idle)
        numbers = [np.array(factors, dtype=float), quadratics.spectral_norms(), quadratics.residual_norms(model),
                   quadratics._gram(np.array([0, 3, 4, 9])).numpy()]
        numbers += [quadratics.residual_norms(torch.as_tensor(row)) for row in idle]
        for quadratic in solved:
            numbers += [quadratic.fixed.numpy(), np.array([quadratic.fixed_error, quadratic.lower, quadratic.upper]),
                        quadratic.residual_norms]
        return numbers
    finally:
        torch.set_num_threads(previous)


def test_small_work_runs_in_order_on_the_caller(two_threads):
    names = on_one_thread_each(lambda _: threading.current_thread().name, range(4), flops=PARALLEL_FLOPS / 2)
    assert names == [threading.current_thread().name] * 4


def test_the_kept_threads_serve_the_next_call(two_threads):
    first = set(on_one_thread_each(lambda _: threading.current_thread().name, range(6)))
    second = set(on_one_thread_each(lambda _: threading.current_thread().name, range(6)))
    assert len(first | second) <= 2


def test_certificate_numbers_are_the_same_on_one_thread_and_two(monkeypatch):
    """Bitwise: every piece is computed by the same single-threaded kernels, split the same way
    (at this small size only because every piece is made worth threads: the Gram's row blocks,
    the machine groups, a partition's solves at once)."""
    monkeypatch.setattr(threads_module, "PARALLEL_FLOPS", 0)
    one, two = _certificate_numbers(1), _certificate_numbers(2)
    assert len(one) == len(two)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)


def _child_sums(connection):
    torch.set_num_threads(2)
    connection.send(on_one_thread_each(lambda value: value + 1, range(4)))


def test_a_forked_child_makes_its_own_threads(two_threads):
    """The kept threads are not in a forked child: it must not hand its items to them (it would wait forever)."""
    import multiprocessing

    on_one_thread_each(lambda value: value, range(4))  # the parent's threads exist
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_child_sums, args=(sending,))
    child.start()
    try:
        assert receiving.poll(120), "the forked child never finished its items"
        assert receiving.recv() == [1, 2, 3, 4]
    finally:
        child.kill()
        child.join()
