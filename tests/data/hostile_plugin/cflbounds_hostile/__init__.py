"""A plugin whose claims do what someone else's code may do (tests/test_isolation.py).

Installed for a test by putting this folder on ``PYTHONPATH``: the ``.dist-info`` beside the
package declares its entry point, so cflbounds (and the worker processes it starts) find it
exactly as they find an installed plugin. ``HOSTILE.GOOD`` is the control, an ordinary claim
that holds; every other claim attacks the run from its check or its domain's evaluation.
"""
import os
import sys
import time

import numpy as np
import pandas as pd
import torch

import cflbounds.claims
from cflbounds.claims import Claim, Domain, Instance, Parameter, rules


def _good(ctx):
    draws = np.random.default_rng(ctx.seed).uniform(0, 1, 40)
    ctx.save_table("hostile_good", pd.DataFrame({"draw": draws, "dtype": str(torch.get_default_dtype())}))
    decision = rules.deterministic(draws, np.ones_like(draws), rtol=0.0, quantity="u")
    return decision.as_verdict("HOSTILE.GOOD", ctx, details={"cwd": os.getcwd(), "seed": str(ctx.seed),
                                                             "dtype": str(torch.get_default_dtype())})


def _holding(claim_id):
    def check(ctx):
        return rules.deterministic([0.5], [1.0], rtol=0.0, quantity="x").as_verdict(claim_id, ctx)
    return check


def _exits(ctx):
    os._exit(0)


def _sys_exit(ctx):
    sys.exit(3)


def _hangs(ctx):
    while True:
        pass


def _sleeps(ctx):
    if os.environ.get("HOSTILE_SLEEP_MARK"):  # a test waits for this file to know the check is under way
        open(os.environ["HOSTILE_SLEEP_MARK"], "w").close()
    time.sleep(3600)


def _changes_directory(ctx):
    os.chdir(os.environ.get("HOSTILE_ELSEWHERE", "/"))
    return _holding("HOSTILE.CHDIR")(ctx)


def _changes_seed(ctx):
    ctx.seed = 12345
    return _holding("HOSTILE.SEED")(ctx)


def _patches_rules(ctx):
    def broken(*args, **kwargs):
        raise RuntimeError("rules.deterministic patched by HOSTILE.PATCH-RULES")

    verdict = _holding("HOSTILE.PATCH-RULES")(ctx)
    cflbounds.claims.rules.deterministic = broken
    return verdict


def _patches_numpy(ctx):
    verdict = _holding("HOSTILE.PATCH-NUMPY")(ctx)
    np.max = np.amax = lambda *args, **kwargs: (_ for _ in ()).throw(RuntimeError("np.max patched"))
    return verdict


def _prints(ctx):
    print("noise from HOSTILE.PRINT on sys.stdout")
    os.write(1, b"noise from HOSTILE.PRINT on file descriptor 1\n")
    return _holding("HOSTILE.PRINT")(ctx)


def _interrupts(ctx):
    raise KeyboardInterrupt("raised by HOSTILE.INTERRUPT, not the user")


def _changes_dtype(ctx):
    torch.set_default_dtype(torch.float64)
    return _holding("HOSTILE.DTYPE")(ctx)


def _evaluation(hostility):
    def evaluate(points, seeds, ctx):
        if hostility == "hang":
            time.sleep(3600)
        if hostility == "exit":
            os._exit(0)
        return [Instance(point["x"], 1.0, []) for point in points]
    return evaluate


def _domain(hostility):
    return Domain([Parameter("x", 0.0, 0.5)], _evaluation(hostility), rule="deterministic")


CLAIMS = [
    Claim("HOSTILE.GOOD", "Uniform draws stay below 1 (the control).", check=_good),
    Claim("HOSTILE.EXIT", "Calls os._exit(0) in its check.", check=_exits),
    Claim("HOSTILE.SYS-EXIT", "Calls sys.exit(3) in its check.", check=_sys_exit),
    Claim("HOSTILE.HANG", "Loops for ever in its check.", check=_hangs),
    Claim("HOSTILE.SLEEP", "Sleeps an hour in its check.", check=_sleeps),
    Claim("HOSTILE.CHDIR", "Changes the working directory in its check.", check=_changes_directory),
    Claim("HOSTILE.SEED", "Sets ctx.seed in its check.", check=_changes_seed),
    Claim("HOSTILE.PATCH-RULES", "Replaces cflbounds.claims.rules.deterministic.", check=_patches_rules),
    Claim("HOSTILE.PATCH-NUMPY", "Replaces numpy's max.", check=_patches_numpy),
    Claim("HOSTILE.PRINT", "Prints on stdout.", check=_prints),
    Claim("HOSTILE.INTERRUPT", "Raises KeyboardInterrupt itself.", check=_interrupts),
    Claim("HOSTILE.DTYPE", "Changes torch's default dtype.", check=_changes_dtype),
    Claim("HOSTILE.DOMAIN-GOOD", "x <= 1 on [0, 0.5] (the control of the searches).", check=_holding("HOSTILE.DOMAIN-GOOD"),
          domain=_domain("none")),
    Claim("HOSTILE.EVAL-HANG", "Its evaluation sleeps an hour.", check=_holding("HOSTILE.EVAL-HANG"),
          domain=_domain("hang")),
    Claim("HOSTILE.EVAL-EXIT", "Its evaluation calls os._exit(0).", check=_holding("HOSTILE.EVAL-EXIT"),
          domain=_domain("exit")),
]
