"""The library follows the machine's load without the CLI (``cflbounds._threads.follow_load``):
each batched computation gets at most the cores other processes leave free and gives the
caller's count back; a pinned count (``CFLBOUNDS_THREADS=fixed``, ``--threads N``) is left alone.

The load is faked (``OtherLoad.cores``) and torch's calls recorded: what is checked is the
decision, on any machine; ``benchmarks/bench_busy_core.py`` measures what it saves."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import cflbounds._threads as threads_module
from cflbounds import InvalidParameterError
from cflbounds._threads import follow_load, pin_threads

REAL_CORES = threads_module.OtherLoad.cores  # before a fixture fakes it


@pytest.fixture
def machine(monkeypatch):
    """A 2-CPU machine whose other load is ``machine.others`` (cores, or None: not known yet),
    torch at 2 threads, every ``set_num_threads`` recorded in ``machine.calls``; load
    following on (the session turns it off) and a fresh judgment."""
    class Machine:
        others = 0.0
        threads = 2
        calls: list = []

    state = Machine()

    def set_threads(count):
        state.calls.append(count)
        state.threads = count

    monkeypatch.setenv("CFLBOUNDS_THREADS", "auto")
    monkeypatch.setattr(threads_module.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads_module.OtherLoad, "cores", lambda self: state.others)
    monkeypatch.setattr(torch, "get_num_threads", lambda: state.threads)
    monkeypatch.setattr(torch, "set_num_threads", set_threads)
    monkeypatch.setitem(threads_module._FOLLOWED, "pinned", False)
    monkeypatch.setitem(threads_module._FOLLOWED, "free", None)
    monkeypatch.setitem(threads_module._FOLLOWED, "load", threads_module.OtherLoad())
    return state


def _inside(machine) -> int:
    with follow_load():
        return machine.threads


def test_a_quiet_machine_keeps_its_threads(machine):
    assert _inside(machine) == 2 and machine.calls == []


@pytest.mark.parametrize("others, expected", [(0.4, 2), (0.6, 1), (1.0, 1), (1.9, 1)])
def test_a_busy_core_is_left_to_its_owner_and_the_count_given_back(machine, others, expected):
    machine.others = others
    assert _inside(machine) == expected
    assert machine.threads == 2 and machine.calls == ([] if expected == 2 else [1, 2])


def test_too_short_an_interval_keeps_the_last_judgment(machine):
    machine.others = 1.0
    assert _inside(machine) == 1
    machine.others = None  # under 0.1 s since: not judged anew
    assert _inside(machine) == 1
    machine.others = 0.0  # the neighbour has gone
    assert _inside(machine) == 2


def test_the_first_judgment_waits_for_an_interval_it_can_judge(machine, monkeypatch):
    """A fresh process: no judgment yet, and too little time since cflbounds loaded; the first
    call waits (20 ms at a time) until the interval can be judged, later calls never wait."""
    readings = iter([None, None, 1.0])
    monkeypatch.setattr(threads_module.OtherLoad, "cores", lambda self: next(readings, None))
    slept = []
    monkeypatch.setattr(threads_module.time, "sleep", slept.append)
    assert _inside(machine) == 1 and slept == [0.02, 0.02]
    assert _inside(machine) == 1 and slept == [0.02, 0.02]  # too short again: the last judgment, no wait


def test_a_machine_that_does_not_say_is_left_alone_without_waiting(machine, monkeypatch):
    monkeypatch.setattr(threads_module, "_machine_busy_ticks", lambda: None)  # no /proc/stat
    monkeypatch.setitem(threads_module._FOLLOWED, "load", threads_module.OtherLoad())
    monkeypatch.setattr(threads_module.OtherLoad, "cores", REAL_CORES)
    machine.others = 1.0  # what the fake would have said: not asked
    slept = []
    monkeypatch.setattr(threads_module.time, "sleep", slept.append)
    assert _inside(machine) == 2 and slept == [] and machine.calls == []


def test_a_pinned_count_is_left_alone(machine, monkeypatch):
    machine.others = 1.0
    pin_threads(True)
    assert _inside(machine) == 2
    pin_threads(False)
    assert _inside(machine) == 1
    monkeypatch.setenv("CFLBOUNDS_THREADS", "fixed")
    assert _inside(machine) == 2 and machine.calls == [1, 2]


def test_a_governor_with_a_count_pins_it_and_auto_follows_again(machine, monkeypatch):
    from conftest import GOVERNOR_SET

    monkeypatch.setattr(threads_module.ThreadGovernor, "_set", GOVERNOR_SET)
    machine.others = 1.0
    threads_module.ThreadGovernor(2)  # --threads 2
    assert _inside(machine) == 2
    threads_module.ThreadGovernor("auto")  # --threads auto: 1 now, and followed
    assert threads_module._FOLLOWED["pinned"] is False


@pytest.mark.parametrize("value", ["2", "Fixed", "", "off"])
def test_a_bad_setting_is_one_clear_error(machine, monkeypatch, capsys, tmp_path, value):
    """From the library at the first batched computation; from the CLI before any work, in one line."""
    from cflbounds.cli import main

    monkeypatch.setenv("CFLBOUNDS_THREADS", value)
    with pytest.raises(InvalidParameterError, match=r"CFLBOUNDS_THREADS must be 'auto' .* or 'fixed' .* Got "
                       + repr(value)):
        _inside(machine)
    assert main(["verify", "IFCA.A2", "--scale", "smoke", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cflbounds verify: error: The environment variable CFLBOUNDS_THREADS must be")
    assert err.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_the_count_is_given_back_when_the_work_raises(machine):
    machine.others = 1.0
    with pytest.raises(RuntimeError), follow_load():
        raise RuntimeError("a check that fails")
    assert machine.threads == 2


def test_an_algorithm_runs_on_the_free_core(machine):
    """``ifca()`` (through ``run_rounds``, which CFL-MGD shares) on a machine with a busy core."""
    from cflbounds.algorithms import ifca
    from cflbounds.synthetic import make_mixed_linear_regression

    seen = []
    machine.others = 1.0
    problem = make_mixed_linear_regression(2, 8, 10, 3, sigma=0.1, seed=[0])
    trace = ifca(problem, iterations=3, monitor=lambda view: seen.append(machine.threads) or None, monitor_every=1)
    assert np.isfinite(trace.final_models).all()
    assert seen and set(seen) == {1} and machine.threads == 2


def test_a_claims_check_runs_on_the_free_core(machine, monkeypatch):
    """The engine runs each check (and each domain evaluation) inside ``follow_load``: a
    plugin's own torch code gets the free cores too."""
    from cflbounds.claims import Claim, Verdict
    from cflbounds.verify import registry, verify

    seen = []

    def check(ctx):
        seen.append(machine.threads)
        return Verdict("MINE.THREADS", "holds", {}, ctx.seed, 1, 0.95, "ok")

    claim = Claim("MINE.THREADS", "the check sees the free cores", check=check)
    monkeypatch.setitem(registry.claims(), "MINE.THREADS", claim.from_package("my-plugin"))
    machine.others = 1.0
    assert verify("MINE.THREADS", scale="smoke").verdict == "holds"
    assert seen == [1] and machine.threads == 2
