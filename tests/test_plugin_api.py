"""The plugin API's helpers (``cflbounds.claims`` and its submodules), which the five papers
use exactly as a plugin does: each public name is documented and does what its docstring says."""
from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cflbounds.claims as claims
from cflbounds.claims import Inequality, VerifyContext
from cflbounds.claims.assumptions import assumption_verdict, labelled, margin_plot, margins
from cflbounds.claims.recovery import adjusted_rand, matched_accuracy, normalized_mutual_info, recovery_scores
from conftest import examples

MODULES = [claims, claims.stats, claims.orderings, claims.assumptions, claims.recovery]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_public_name_is_documented(module):
    assert module.__doc__
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isfunction(value) or inspect.isclass(value) or inspect.ismodule(value):
            assert inspect.getdoc(value), f"{module.__name__}.{name} has no docstring"


def test_the_public_statistics_are_the_engines():
    """One implementation: a plugin's interval is the one behind cflbounds' own verdicts."""
    from cflbounds.verify import orderings, stats
    for name in claims.stats.__all__:
        assert getattr(claims.stats, name) is getattr(stats, name)
    for name in claims.orderings.__all__:
        assert getattr(claims.orderings, name) is getattr(orderings, name)


def _brute_matched(truth, found):
    """The best one-to-one map from found to planted labels, by trying every one."""
    found_labels, truth_labels = sorted(set(found)), sorted(set(truth))
    best = 0
    for image in itertools.permutations(truth_labels + [None] * len(found_labels), len(found_labels)):
        mapping = dict(zip(found_labels, image))
        best = max(best, sum(mapping[f] == t for t, f in zip(truth, found)))
    return best / len(truth)


@examples(60)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), min_size=2, max_size=9))
def test_matched_accuracy_is_the_best_one_to_one_map(pairs):
    truth, found = (np.array(column) for column in zip(*pairs))
    assert matched_accuracy(truth, found)[0] == pytest.approx(_brute_matched(list(truth), list(found)))


@examples(40)
@given(st.lists(st.integers(0, 3), min_size=3, max_size=12), st.permutations(range(4)))
def test_a_relabelled_partition_is_recovered_exactly(truth, relabel):
    truth = np.array(truth)
    found = np.array(relabel)[truth]
    scores = recovery_scores(np.stack([truth, truth]), np.stack([found, found]))
    assert {key: value.shape for key, value in scores.items()} == {"ari": (2,), "nmi": (2,), "matched_accuracy": (2,)}
    np.testing.assert_allclose(scores["matched_accuracy"], 1.0)
    if len(set(truth)) > 1:  # one cluster: ARI is 1 by scikit-learn's convention too, NMI as well
        np.testing.assert_allclose(adjusted_rand(truth, found), 1.0)
        np.testing.assert_allclose(normalized_mutual_info(truth, found), 1.0)


def test_recovery_of_a_wrong_partition_and_a_shape_mismatch():
    truth, found = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])  # independent of the truth
    assert adjusted_rand(truth, found)[0] < 0 and normalized_mutual_info(truth, found)[0] == pytest.approx(0.0)
    assert matched_accuracy(truth, found)[0] == 0.5
    with pytest.raises(ValueError, match="differ in shape"):
        recovery_scores(truth, found[:3])


def _rows():
    return [Inequality("a <= b", 1.0, 4.0, "<=", "Assumption 1").as_dict(),  # margin 4
            Inequality("a <= b", 2.0, 4.0, "<=", "Assumption 1").as_dict(),  # margin 2: the tightest of a <= b
            Inequality("c >= d", 3.0, 1.0, ">=", "Assumption 2").as_dict()]  # margin 3


def test_margins_and_the_tightest_row():
    rows = _rows()
    np.testing.assert_allclose(margins(rows), [4.0, 2.0, 3.0])
    ctx = VerifyContext(scale="smoke")
    verdict = assumption_verdict(ctx, "PAPER.A1", labelled(rows, "problem 1"), 1, "as printed")
    assert verdict.verdict == "holds"
    assert [row["lhs"] for row in verdict.assumptions] == [2.0, 3.0]  # one per inequality, the tightest
    assert verdict.evidence["smallest_margin_ratio"] == 2.0 and verdict.evidence["failing"] == 0
    assert all(row["source"].endswith("(problem 1)") for row in verdict.assumptions)
    assert len(ctx.tables["paper_assumptions_a1"]) == 3  # every row is kept, not only the tightest


def test_a_failing_inequality_is_violated_and_drawn_below_one():
    rows = _rows() + [Inequality("c >= d", 0.01, 1.0, ">=", "Assumption 2").as_dict()]  # margin 0.01
    verdict = assumption_verdict(VerifyContext(scale="smoke"), "PAPER.A1", rows, 2, "as printed")
    assert verdict.verdict == "violated" and verdict.evidence["failing"] == 1
    plot = margin_plot("PAPER.A1", rows)
    assert plot["series"][0]["fails"] == [False, True] and plot["logy"]  # 0.01 to 2 spans more than a decade
    assert not margin_plot("PAPER.A1", _rows())["logy"]  # 1 to 3: a linear axis
