"""ctx.checkpoint: a long claim's finished configurations kept on disk, results unchanged."""
import importlib
import signal

import pandas as pd
import pytest

import cflbounds.papers.fedcluster.checks as fedcluster_checks
import cflbounds.papers.fedcluster.rates as fedcluster_rates
from cflbounds.verify import VerifyContext, verify_claims


def never(*args):
    pytest.fail("computed although a checkpoint holds the result")


def test_checkpoint_computes_once_and_reads_back_in_a_new_context(tmp_path):
    first = VerifyContext(scale="smoke", seed=3, workdir=tmp_path)
    value = {"rows": list(range(5)), "x": 0.1 + 0.2}
    assert first.checkpoint(("cfg", 1), lambda: value) == value
    (stored,) = (tmp_path / "partial").iterdir()
    assert stored.name.startswith("cfg-1-") and stored.suffix == ".npz"
    again = VerifyContext(scale="smoke", seed=3, workdir=tmp_path)  # a resumed run: nothing in memory
    assert again.checkpoint(("cfg", 1), never) == value
    assert first.checkpoint(("cfg", 1), never) is first.checkpoint(("cfg", 1), never)  # cached in memory too


@pytest.mark.parametrize("change", [{"seed": 4}, {"scale": "default"}, {"device": "cuda"}])
def test_a_checkpoint_is_read_only_under_the_settings_that_made_it(tmp_path, change):
    VerifyContext(scale="smoke", seed=3, workdir=tmp_path).checkpoint(("cfg", 1), lambda: "made at seed 3")
    other = VerifyContext(**{"scale": "smoke", "seed": 3, "workdir": tmp_path, **change})
    assert other.checkpoint(("cfg", 1), lambda: "fresh") == "fresh"
    assert len(list((tmp_path / "partial").iterdir())) == 2


def test_without_a_run_directory_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    context = VerifyContext(scale="smoke")
    assert context.checkpoint(("cfg",), lambda: 7) == 7 and context.checkpoint(("cfg",), never) == 7
    assert list(tmp_path.iterdir()) == []


class StopAfter:
    """Wraps run_set: counts the configurations computed and stops the run with the user's
    Ctrl-C (a SIGINT) when asked to compute configuration number ``limit + 1``."""

    def __init__(self, run_set, limit=None):
        self.run_set, self.limit, self.calls = run_set, limit, 0

    def __call__(self, *args, **kwargs):
        if self.limit is not None and self.calls == self.limit:
            signal.raise_signal(signal.SIGINT)
        self.calls += 1
        return self.run_set(*args, **kwargs)


def _fc_h(monkeypatch, workdir, limit=None):
    counter = StopAfter(fedcluster_checks.run_set, limit)
    monkeypatch.setattr(fedcluster_checks, "run_set", counter)
    monkeypatch.setattr(fedcluster_rates, "run_set", counter)
    context = VerifyContext(scale="smoke", seed=0, device="cpu", workdir=workdir)
    try:
        (verdict,) = verify_claims(["FC.H"], context)
    finally:
        monkeypatch.undo()
    return verdict, context.tables["fc_heterogeneity"], counter.calls


def _without_time(verdict):
    data = verdict.to_dict()
    data.pop("seconds")
    return data


def test_fc_h_stopped_half_way_resumes_from_its_finished_configurations(tmp_path, monkeypatch):
    """FC.H over FedCluster's run sets: uninterrupted without checkpoints, then stopped after 5
    configurations and resumed in the same directory. The resumed run computes only the rest,
    and its verdict and table are identical to the uninterrupted run's (bit for bit)."""
    reference, reference_table, total = _fc_h(monkeypatch, workdir=None)
    assert total > 10
    with pytest.raises(KeyboardInterrupt):
        _fc_h(monkeypatch, tmp_path, limit=5)
    assert len(list((tmp_path / "partial").glob("*.npz"))) == 5
    resumed, resumed_table, computed = _fc_h(monkeypatch, tmp_path)
    assert computed == total - 5
    assert _without_time(resumed) == _without_time(reference)
    pd.testing.assert_frame_equal(resumed_table, reference_table, check_exact=True)


@pytest.mark.parametrize("claim_id, module, function", [
    ("DSC.E14", "cflbounds.papers.dsc.experiment", "run_configuration"),
    ("MGD.L2", "cflbounds.papers.cfl_mgd.checks", "_one_step_table"),
])
def test_a_checkpointed_claim_reads_its_configurations_back_unchanged(tmp_path, monkeypatch, claim_id, module,
                                                                      function):
    """Run with a run directory (checkpoints written), then in a fresh context with the
    configurations' computation made to fail: the verdict comes from the checkpoints and equals
    the verdict of a run that kept nothing on disk."""
    monkeypatch.setenv("CFLBOUNDS_CACHE", str(tmp_path / "pep-cache"))
    (reference,) = verify_claims([claim_id], VerifyContext(scale="smoke", seed=0, device="cpu"))
    (first,) = verify_claims([claim_id], VerifyContext(scale="smoke", seed=0, device="cpu", workdir=tmp_path))
    assert list((tmp_path / "partial").glob("*.npz"))
    monkeypatch.setattr(importlib.import_module(module), function, never)
    (again,) = verify_claims([claim_id], VerifyContext(scale="smoke", seed=0, device="cpu", workdir=tmp_path))
    assert _without_time(again) == _without_time(first) == _without_time(reference)
