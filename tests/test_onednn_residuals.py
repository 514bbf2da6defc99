"""The residuals' GEMM on oneDNN for one large CPU float32 problem (squared_loss.onednn_residuals):
the same residuals as MKL's to float32 rounding, a run's numbers independent of the other runs
in its batch and of the thread count, and the features converted once per stored tensor."""
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


def _onednn(features: torch.Tensor) -> torch.Tensor:
    return features.reshape(-1, D).to_mkldnn()


def test_onednn_residuals_agree_with_mkls_to_float32_rounding():
    """Sums of 500 products of unit normals: entries about 22 in size, float32's rounding of such
    a sum at most about 500 u 22 = 7e-4; they agree far inside that."""
    features, responses = _problem()
    models = _models(10)
    torch.testing.assert_close(residuals(features, responses, models, _onednn(features)),
                               residuals(features, responses, models), rtol=0, atol=1e-4)


def test_a_runs_residuals_do_not_depend_on_the_other_runs_in_its_batch():
    """The two-wave step order computes a trial's runs in different company (10 runs, then the
    rest); a run's numbers, bit for bit, must not follow which other runs share the GEMM."""
    features, responses = _problem()
    models = _models(10)
    blocked = _onednn(features)
    every = residuals(features, responses, models, blocked)
    for runs in ([3], [0, 4, 9], list(range(7))):
        assert torch.equal(residuals(features, responses, models[:, runs], blocked), every[..., runs, :])


def test_onednn_residuals_are_the_same_on_one_and_two_threads(two_threads):
    features, responses = _problem()
    models = _models(10)
    blocked = _onednn(features)
    on_two = residuals(features, responses, models, blocked)
    torch.set_num_threads(1)
    assert torch.equal(residuals(features, responses, models, blocked), on_two)


class _Problem:
    def __init__(self, features, responses):
        self.features, self.responses, self.m = features, responses, features.shape[1]


def test_the_kernel_converts_the_stored_features_once_and_nothing_else(monkeypatch):
    """The stored features are converted at the first iteration and reused; after an in-place
    change they are converted again; other features (a fresh draw, a split's batch) and a batch
    of two problems use MKL, as do float64 features."""
    features, responses = _problem()
    kernel = SquaredLoss(_Problem(features, responses))
    converted = []
    to_mkldnn = torch.Tensor.to_mkldnn
    monkeypatch.setattr(torch.Tensor, "to_mkldnn", lambda tensor, *a: converted.append(tensor.shape) or to_mkldnn(tensor, *a))
    models = _models(4)
    first = kernel.evaluate((features, responses), models)
    kernel.evaluate((features, responses), models)
    assert converted == [(M * N, D), (8, D), (8, D)]  # the features once, the models at every call
    torch.testing.assert_close(first, residuals(features, responses, models), rtol=0, atol=1e-4)
    features.mul_(1.0)  # an in-place change: its version moves
    kernel.evaluate((features, responses), models)
    assert converted[3] == (M * N, D)
    converted.clear()
    kernel.evaluate((features.clone(), responses), models)
    pair = _problem(batch=2)
    SquaredLoss(_Problem(*pair)).evaluate(pair, torch.cat([models, models]))
    wide = (features.double(), responses.double())
    SquaredLoss(_Problem(*wide)).evaluate(wide, models.double())
    assert converted == []


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


@pytest.mark.parametrize("broken", ["raises", "wrong numbers", "missing"])
def test_a_torch_whose_onednn_linear_breaks_keeps_mkl(broken, monkeypatch):
    """``mkldnn_linear`` is private torch API: if a newer torch removes it, changes its
    signature or its numbers, the residuals stay on MKL (the probe on a small exact product)."""
    def raises(*args):
        raise TypeError("mkldnn_linear() takes 2 arguments")

    def wrong(features, weight, bias):
        return (torch.ones(features.shape[0], weight.shape[0])).to_mkldnn()

    if broken == "missing":
        monkeypatch.delattr(torch._C._nn, "mkldnn_linear")
    else:
        monkeypatch.setattr(torch._C._nn, "mkldnn_linear", raises if broken == "raises" else wrong)
    squared_loss._onednn_works.cache_clear()
    try:
        assert not onednn_residuals(1, 100, 100, 1000, torch.float32, torch.device("cpu"))
    finally:
        monkeypatch.undo()
        squared_loss._onednn_works.cache_clear()
    assert onednn_residuals(1, 100, 100, 1000, torch.float32, torch.device("cpu"))
