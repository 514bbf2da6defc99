"""IFCA.TAB1 on rotated digits: IFCA > global model (FedAvg) > local model in test
accuracy (IFCA Table 1, Rotated MNIST), from the runs of :mod:`.digits_runs`.

IFCA is scored with the paper's protocol (Sec. 6.2: every test client uses the model of
lowest loss on its own test data); the score with each client's training-data choice is
reported beside it. Orderings are strict, judged from paired intervals over seeds; the
verdict covers both small models (the paper's is a one-hidden-layer network, our MLP;
softmax regression is an extra, linear model).
"""
from __future__ import annotations

from cflbounds.claims import Verdict, VerifyContext
from cflbounds.claims.orderings import judge_ordering, orderings_verdict
from ..rotated_digits import SCHEDULE, K, digits_runs, select
from ..lcfl.accuracy import CONFIDENCE, TOLERANCE, accuracy_plot, evidence_key

__all__ = ["check_tab1"]

_METHODS = ("IFCA (test-argmin)", "IFCA", "FedAvg", "Local")


def check_tab1(ctx: VerifyContext) -> Verdict:
    runs = digits_runs(ctx)
    cfg = runs["config"]
    accuracy = lambda model, method: select(runs["accuracy"], model=model, method=method)["accuracy"].to_numpy()
    evidence, lines, everything = {"trials": cfg["trials"], "clients": cfg["m"], "rounds": cfg["rounds"]}, [], []
    comparisons = 2 * len(cfg["models"])
    for model in cfg["models"]:
        judgments = [judge_ordering(f"{a} > {b}", accuracy(model, a), accuracy(model, b), relation=">",
                                    tolerance=TOLERANCE, confidence=CONFIDENCE, comparisons=comparisons)
                     for a, b in (("IFCA (test-argmin)", "FedAvg"), ("FedAvg", "Local"))]
        everything += judgments
        for method in _METHODS:
            evidence[evidence_key(model, "accuracy", method)] = float(accuracy(model, method).mean())
        for j, tag in zip(judgments, ("ifca_gt_global", "global_gt_local")):
            evidence.update(j.as_evidence(f"{model}_{tag}"))
        evidence[f"{model}_ifca_ari"] = float(select(runs["recovery"], model=model, metric="ifca")["ari"].mean())
        score = lambda method: evidence[evidence_key(model, "accuracy", method)]  # noqa: E731
        lines.append(f"{model} ({orderings_verdict(judgments)}) [IFCA {score('IFCA (test-argmin)'):.3f} (training choice {score('IFCA'):.3f}, ARI "
                     f"{evidence[f'{model}_ifca_ari']:.2f}), global {score('FedAvg'):.3f}, local {score('Local'):.3f}]: "
                     + "; ".join(j.describe() for j in judgments))
    verdict = orderings_verdict(everything)
    summary = (f"{verdict} over {cfg['trials']} seeds (mean paired difference, 95% t-interval; 'contradicted' = below 0 "
               f"at the Bonferroni level over the {comparisons} orderings): " + " | ".join(lines))
    plots = [accuracy_plot(runs, model, _METHODS, f"IFCA.TAB1: final test accuracy on rotated digits ({model})")
             for model in cfg["models"]]
    return Verdict("IFCA.TAB1", verdict, evidence, ctx.seed, cfg["trials"], CONFIDENCE, summary, plot=plots, details={
        "data": f"digits rotated 0/90/180/270 (k = {K}), {cfg['m']} clients x {cfg['train_per_client']} train / "
                f"{cfg['test_per_client']} test images (not MNIST: scikit-learn's 8x8 digits)",
        "methods": f"IFCA k = {K}, model averaging, random initial models; global = FedAvg; local = Local training; "
                   f"{cfg['rounds']} rounds x {cfg['local_steps']} full-batch steps, step {SCHEDULE['step_size']}",
        "orderings": "IFCA > global and global > local, strict: holds only when each interval lies above 0"})
