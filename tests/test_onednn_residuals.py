"""The residuals' GEMM on oneDNN for one large CPU float32 problem (squared_loss.onednn_residuals):
the same residuals as MKL's to float32 rounding, a run's numbers independent of the other runs
in its batch and of the thread count, and chosen by the problem's shape alone, wherever the
residuals are computed."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from cflbounds.algorithms import squared_loss
from cflbounds.algorithms.squared_loss import SquaredLoss, onednn_residuals, residuals

pytestmark = pytest.mark.skipif(not onednn_residuals(1, 10**3, 10**3, 1, torch.float32, torch.device("cpu")),
                                reason="torch without oneDNN on this CPU")

M, N, D = 40, 50, 500  # 10^6 values: the smallest problem that runs on oneDNN


def _problem(seed: int = 0, batch: int = 1):
    rng = np.random.default_rng(seed)
    features = torch.as_tensor(rng.standard_normal((batch, M, N, D)), dtype=torch.float32)
    responses = torch.as_tensor(rng.standard_normal((batch, M, N)), dtype=torch.float32)
    return features, responses


def _models(runs: int, seed: int = 1) -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(seed).standard_normal((1, runs, 2, D)), dtype=torch.float32)


def test_onednn_residuals_agree_with_mkls_to_float32_rounding():
    """Sums of 500 products of unit normals: entries about 22 in size, float32's rounding of such
    a sum at most about 500 u 22 = 7e-4; they agree far inside that."""
    features, responses = _problem()
    models = _models(10)
    torch.testing.assert_close(residuals(features, responses, models, onednn=True),
                               residuals(features, responses, models, onednn=False), rtol=0, atol=1e-4)


def test_a_runs_residuals_do_not_depend_on_the_other_runs_in_its_batch():
    """The two-wave step order computes a trial's runs in different company (10 runs, then the
    rest); a run's numbers, bit for bit, must not follow which other runs share the GEMM."""
    features, responses = _problem()
    models = _models(10)
    every = residuals(features, responses, models, onednn=True)
    for runs in ([3], [0, 4, 9], list(range(7))):
        assert torch.equal(residuals(features, responses, models[:, runs], onednn=True), every[..., runs, :])


def test_onednn_residuals_are_the_same_on_one_and_two_threads(two_threads):
    features, responses = _problem()
    models = _models(10)
    on_two = residuals(features, responses, models, onednn=True)
    torch.set_num_threads(1)
    assert torch.equal(residuals(features, responses, models, onednn=True), on_two)


class _Problem:
    def __init__(self, features, responses):
        self.features, self.responses, self.m = features, responses, features.shape[1]


def test_the_kernel_chooses_onednn_by_the_shape_alone(monkeypatch):
    """The stored features, a fresh draw of the same shape and the gradient's own residuals
    (re-sampled data) all take oneDNN; a batch of two problems and float64 features take MKL.
    The kernel's residuals are oneDNN's bit for bit, and it keeps no copy of the features."""
    features, responses = _problem()
    models = _models(4)
    kernel = SquaredLoss(_Problem(features, responses))
    assert torch.equal(kernel.evaluate((features, responses), models),
                       residuals(features, responses, models, onednn=True))
    calls = []
    real = squared_loss._onednn_linear
    monkeypatch.setattr(squared_loss, "_onednn_linear", lambda *args: calls.append(args[0].shape) or real(*args))

    def on_onednn(compute) -> bool:
        before = len(calls)
        compute()
        return len(calls) == before + 1

    chosen = torch.nn.functional.one_hot(torch.zeros(1, M, 4, dtype=torch.long), 2).to(features.dtype)
    pair = _problem(batch=2)
    wide = (features.double(), responses.double())
    assert on_onednn(lambda: kernel.evaluate((features.clone(), responses), models))
    assert on_onednn(lambda: kernel.cluster_gradient_sums((features, responses), models, chosen))
    assert not on_onednn(lambda: SquaredLoss(_Problem(*pair)).evaluate(pair, torch.cat([models, models])))
    assert not on_onednn(lambda: SquaredLoss(_Problem(*wide)).evaluate(wide, models.double()))
    assert vars(kernel).keys() <= {"problem", "gradient_factor"}  # nothing of the features kept


@pytest.mark.parametrize("case, expected", [
    ((1, 100, 100, 1000, torch.float32, "cpu"), True),  # Fig. 2 at paper size
    ((1, 40, 50, 500, torch.float32, "cpu"), True),  # the smallest
    ((1, 40, 50, 499, torch.float32, "cpu"), False),
    ((40, 100, 100, 100, torch.float32, "cpu"), False),  # IFCA.F2 at verify's default scale
    ((2, 100, 100, 1000, torch.float32, "cpu"), False),
    ((1, 100, 100, 1000, torch.float64, "cpu"), False),
    ((1, 100, 100, 1000, torch.float32, "cuda"), False),
])
def test_which_problems_run_on_onednn(case, expected):
    *sizes, dtype, device = case
    assert onednn_residuals(*sizes, dtype, torch.device(device)) is expected
    assert squared_loss.ONEDNN_VALUES == 40 * 50 * 500


@pytest.mark.parametrize("broken", ["raises", "wrong numbers", "missing", "not a tensor"])
def test_a_torch_whose_onednn_linear_breaks_keeps_mkl(broken, monkeypatch):
    """oneDNN's linear primitive is private torch API: if a newer torch removes it, changes its
    signature, its numbers or what it returns, the residuals stay on MKL (the probe on a small
    exact product)."""
    def raises(features, weight):
        raise {"raises": TypeError, "missing": AttributeError}[broken]("_linear_pointwise")

    def wrong(features, weight):
        return torch.ones(features.shape[0], weight.shape[0])

    def not_a_tensor(features, weight):
        return (features @ weight.T).to_mkldnn()

    monkeypatch.setattr(squared_loss, "_onednn_linear",
                        {"wrong numbers": wrong, "not a tensor": not_a_tensor}.get(broken, raises))
    squared_loss._onednn_works.cache_clear()
    try:
        assert not onednn_residuals(1, 100, 100, 1000, torch.float32, torch.device("cpu"))
    finally:
        monkeypatch.undo()
        squared_loss._onednn_works.cache_clear()
    assert onednn_residuals(1, 100, 100, 1000, torch.float32, torch.device("cpu"))
