"""A batch's problems are drawn at once, one per thread, with the numbers of a serial loop
(``cflbounds.synthetic.batch_draws``).

Each problem draws from its own stream, so drawing them on two threads must give exactly the
tensors one thread gives, and each problem must be the one drawn alone. What is checked: two
problems really are drawn at once (a barrier both must reach), the generators' batches are
bitwise the same on one thread and two, an error in one problem's draw reaches the caller, a
batch's ``slice`` is a view holding the problems ``subset`` copies, and Gaussian features drawn a
few machines at a time are bit for bit the whole array drawn at once.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from cflbounds._threads import PARALLEL_FLOPS
from cflbounds.synthetic import make_mixed_linear_regression
from cflbounds.synthetic import batch_draws
from cflbounds.synthetic.batch_draws import DRAW_FLOPS, draw_batch, gaussian_features
from cflbounds.synthetic.logistic_mixture import make_logistic_mixture

# values per problem that make a batch of two worth threads (draw_batch's work estimate)
_SHAPE = (1000, -(-int(PARALLEL_FLOPS) // (2 * DRAW_FLOPS * 1000)))


def test_two_problems_are_drawn_at_once(two_threads):
    barrier = threading.Barrier(2, timeout=60)  # a serial draw would wait here for the other problem

    def draw(rng, b, rows):
        barrier.wait()
        rows[0].copy_(torch.as_tensor(rng.standard_normal(_SHAPE)))
        rows[1].fill_(b)

    rngs = [np.random.default_rng(seed) for seed in (5, 6)]
    features, labels = draw_batch(rngs, draw, [_SHAPE, (3,)], torch.float32, torch.device("cpu"))
    for b, seed in enumerate((5, 6)):
        assert torch.equal(features[b], torch.as_tensor(np.random.default_rng(seed).standard_normal(_SHAPE)).float())
        assert torch.equal(labels[b], torch.full((3,), float(b)))


@pytest.mark.parametrize("make, kwargs", [
    (make_mixed_linear_regression, dict(k=2, m=20, n=50, d=500, sigma=0.1)),
    (make_logistic_mixture, dict(k=2, m=20, n=50, d=500)),
])
def test_a_batch_is_the_same_on_one_thread_and_two(make, kwargs):
    """Three problems, big enough for threads: the same tensors either way, each the problem
    drawn alone."""
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        two = make(batch_size=3, seed=11, dtype="float32", **kwargs)
        torch.set_num_threads(1)
        one = make(batch_size=3, seed=11, dtype="float32", **kwargs)
    finally:
        torch.set_num_threads(previous)
    data = "responses" if hasattr(two, "responses") else "labels"
    assert torch.equal(two.features, one.features) and torch.equal(getattr(two, data), getattr(one, data))
    alone = make(batch_size=1, seed=[two.seeds[2]], dtype="float32", **kwargs)
    assert torch.equal(alone.features[0], two.features[2]) and torch.equal(getattr(alone, data)[0],
                                                                            getattr(two, data)[2])


def test_an_error_in_one_problem_reaches_the_caller(two_threads):
    def draw(rng, b, rows):
        if b == 1:
            raise ValueError("problem 1 cannot be drawn")
        rows[0].copy_(torch.as_tensor(rng.standard_normal(_SHAPE)))

    rngs = [np.random.default_rng(seed) for seed in (1, 2)]
    with pytest.raises(ValueError, match="problem 1"):
        draw_batch(rngs, draw, [_SHAPE], torch.float64, torch.device("cpu"))


def test_a_slice_is_a_view_of_the_problems_a_subset_copies():
    batch = make_mixed_linear_regression(k=2, m=4, n=3, d=5, batch_size=4, seed=3, dtype="float32")
    part, copy = batch.slice(1, 3), batch.subset([1, 2])
    for name in ("features", "responses", "theta_star"):
        assert torch.equal(getattr(part, name), getattr(copy, name))
        assert getattr(part, name).data_ptr() == getattr(batch, name)[1].data_ptr()  # shares the batch's memory
        assert getattr(copy, name).data_ptr() != getattr(batch, name)[1].data_ptr()
    assert part.seeds == copy.seeds == batch.seeds[1:3]
    np.testing.assert_array_equal(part.theta_star_exact, batch.theta_star_exact[1:3])
    assert torch.equal(part.draw(2, 0)[0], batch.draw(2, 0)[0][1:3])  # the same problems: the same fresh draws


@pytest.mark.parametrize("chunk_machines, dtype", [(1, torch.float32), (3, torch.float32), (7, torch.float64),
                                                   (50, torch.float32)])
def test_features_drawn_in_chunks_are_the_whole_draw(chunk_machines, dtype, monkeypatch):
    """7 machines through buffers of 1, 3 (a last chunk of one), 7 and more machines: the cast
    features and the float64 products are bit for bit one call's draw and one einsum, and the
    stream is left where that call leaves it (the next draw is the same)."""
    m, n, d = 7, 5, 11
    monkeypatch.setattr(batch_draws, "CHUNK_BYTES", chunk_machines * n * d * 8)
    weights = np.random.default_rng(0).standard_normal((m, d))
    out = torch.empty((m, n, d), dtype=dtype)
    rng, whole = np.random.default_rng(4), np.random.default_rng(4)
    products = gaussian_features(rng, out, weights)
    x = whole.standard_normal((m, n, d))
    assert torch.equal(out, torch.as_tensor(x).to(dtype))
    np.testing.assert_array_equal(products, np.einsum("mnd,md->mn", x, weights))
    np.testing.assert_array_equal(rng.standard_normal(3), whole.standard_normal(3))
