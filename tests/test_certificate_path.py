"""The early-exit certificate's path check (``FinalDistanceCertificate._path_holds``): following
gradient descent ahead must never certify a partition that changes.

Each case is checked against a straightforward float64 simulation of IFCA on the same data
(every machine picks its model by its loss, each model takes the gradient step of the machines
that chose it), written here independently of the certificate: where the path check says the
partition holds for the remaining iterations, the simulation must keep it; a machine planted
with the other cluster's responses must make it refuse, and exactly when the switch falls inside
the remaining iterations.
"""
import numpy as np
import pytest
import torch

from cflbounds.algorithms.squared_loss import LOSS_CONVENTIONS
from cflbounds.sweeps import certificate
from cflbounds.sweeps.certificate import FinalDistanceCertificate, _ball_holds
from cflbounds.sweeps.cluster_quadratics import ClusterQuadratics
from cflbounds.synthetic import make_mixed_linear_regression

M, N, D, STEP = 12, 40, 16, 0.5  # two true clusters of 6 machines: 240 points each in d = 16


def _problem(seed, misfit=None):
    """A float32 problem's data as float64 arrays, and its certificate and quadratics; machine
    ``misfit`` (of true cluster 0) gets responses from cluster 1's truth."""
    problem = make_mixed_linear_regression(2, M, N, D, sigma=0.1, scale=0.5, batch_size=1, seed=[seed],
                                           dtype="float32")
    features, responses = problem.features[0], problem.responses[0].clone()
    truths = problem.theta_star_exact[0]
    if misfit is not None:
        noise = responses[misfit] - features[misfit].double() @ torch.as_tensor(truths[0])
        responses[misfit] = (features[misfit].double() @ torch.as_tensor(truths[1]) + noise).float()
    quadratics = ClusterQuadratics.of_problem(features, responses, problem.membership, LOSS_CONVENTIONS["mean"](N))
    check = FinalDistanceCertificate(problem.theta_star_exact, [quadratics], problem.membership, iterations=300,
                                     threshold=0.061, metric="nearest")
    return features.double().numpy(), responses.double().numpy(), np.asarray(problem.membership), check, quadratics


def _first_switch(features, responses, models, partition, iterations, step=STEP):
    """The first of ``iterations`` IFCA iterations (float64, at ``step``) at which some machine's
    choice differs from ``partition``, or None."""
    scale = LOSS_CONVENTIONS["mean"](N) / M
    models = models.copy()
    for s in range(iterations):
        residuals = np.einsum("ind,jd->ijn", features, models) - responses[:, None, :]  # (m, k, n)
        choice = np.argmin(np.square(residuals).sum(-1), axis=1)
        if np.any(choice != partition):
            return s
        for j in range(models.shape[0]):
            chosen = choice == j
            gradient = np.einsum("ind,in->d", features[chosen], residuals[chosen, j])
            models[j] = models[j] - step * scale * gradient
    return None


def _path_holds(check, quadratics, models, partition, remaining, step=STEP):
    plan = check._plan(0, partition, step, 2)
    assert plan is not None
    return check._path_holds(models, quadratics, partition, plan, remaining, quadratics.spectral_norms())


def _misfit_states(features, responses, membership, fixed):
    """Models whose partition holds now although machine 0 (planted with cluster 1's data) will
    leave it: model 0 at its fixed point, model 1 pushed out along machine 0's top singular
    direction, where machine 0's loss grows faster than its cluster-1 neighbours' (distances on a
    grid, each kept if every machine still picks its true model)."""
    direction = np.linalg.svd(features[0], full_matrices=False)[2][0]
    states = []
    for distance in np.linspace(0.2, 3.0, 29):
        models = fixed.copy()
        models[1] = models[1] + distance * direction
        if _first_switch(features, responses, models, membership, 1) is None:
            states.append(models)
    return states


@pytest.mark.parametrize("misfit", [None, 0])
def test_a_partition_the_path_certifies_never_changes(misfit):
    """Wherever the path check certifies the true partition for 120 iterations, a full simulation
    keeps it that long: from the fixed points plus random offsets of growing size on clean data
    (where it certifies states the balls alone cannot), and from states a planted misfit machine
    will leave (where the simulation finds the change and the check refuses every one)."""
    seen = []
    for seed in range(6):
        features, responses, membership, check, quadratics = _problem(seed, misfit)
        plan = check._plan(0, membership, STEP, 2)
        if misfit is None:
            rng = np.random.default_rng(seed)
            states = [plan.fixed + size * rng.standard_normal((2, D)) / np.sqrt(D) for size in (0.5, 1, 2, 4, 8)]
        else:
            states = _misfit_states(features, responses, membership, plan.fixed)
        for models in states:
            if _first_switch(features, responses, models, membership, 1) is not None:
                continue  # the loop's next assignment would already differ: not this partition's look
            radii = np.linalg.norm(models - plan.fixed, axis=-1) + plan.errors
            ball = _ball_holds(plan.norms, quadratics.spectral_norms(), radii + plan.errors, membership)
            path = _path_holds(check, quadratics, models, membership, remaining=120)
            holds = _first_switch(features, responses, models, membership, 120) is None
            assert holds or not path, seed
            seen.append((ball, path, holds))
    if misfit is None:
        assert any(path and not ball for ball, path, _ in seen), seen
    else:
        assert seen and not any(holds for _, _, holds in seen), seen


def test_a_machine_with_the_other_clusters_data_makes_the_path_refuse():
    """Planted: machine 0 of true cluster 0 answers with cluster 1's truth. Model 1 starts out
    along machine 0's top singular direction, so at first machine 0 still prefers model 0; as
    model 1 approaches its fixed point, machine 0 switches (the simulation says when). The path
    check refuses every horizon that reaches the switch and certifies the ones that end before it."""
    features, responses, membership, check, quadratics = _problem(seed=3, misfit=0)
    plan = check._plan(0, membership, STEP, 2)
    models = _misfit_states(features, responses, membership, plan.fixed)[-1]  # the furthest: the latest switch
    step = 0.05  # slow enough that the switch comes several iterations on
    switch = _first_switch(features, responses, models, membership, 60, step)
    assert switch is not None and switch > 3, switch
    assert not _path_holds(check, quadratics, models, membership, switch + 1, step)
    assert not _path_holds(check, quadratics, models, membership, 60, step)
    assert _path_holds(check, quadratics, models, membership, switch, step)


def test_a_path_longer_than_the_cap_is_refused(monkeypatch):
    """Where the balls would need more steps than ``_PATH_STEPS`` to hold, no certificate is given
    (and no pass over the data is made); with the cap lifted the same state is certified."""
    features, responses, membership, check, quadratics = _problem(seed=1)
    plan = check._plan(0, membership, STEP, 2)
    rng = np.random.default_rng(5)
    models = plan.fixed + rng.standard_normal((2, D)) / np.sqrt(D)
    assert _first_switch(features, responses, models, membership, 200) is None
    monkeypatch.setattr(certificate, "_PATH_STEPS", 1000)
    assert _path_holds(check, quadratics, models, membership, remaining=200)
    monkeypatch.setattr(certificate, "_PATH_STEPS", 1)
    passes = []
    monkeypatch.setattr(ClusterQuadratics, "residual_norm_matrix", lambda self, models: passes.append(models))
    assert not _path_holds(check, quadratics, models, membership, remaining=200)
    assert passes == []
