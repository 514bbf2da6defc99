"""DSC.ACC: DSC against FedAvg on real data, in a noisy and in an ideal channel.

Data: scikit-learn's digits split over K clients with two random labels each
(:func:`make_digit_clients` with ``structure="label-skew"``, 400-800 samples scaled to the
data set's size); clients placed in the paper's 100 m square. Every method trains one
softmax-regression model by the hierarchical aggregation of eqs. (2)-(4) with the angle
weights of eq. (3) and full local gradients: DSC (both stages, Setting 1), its data stage
alone (Setting 2) and FedAvg (every client uploads to the BS, weight ``|D_k|/D``), with
upload noise of eq. (5) (``noise_scale`` at the reference SNR) or without it. Accuracy is
the global model's, pooled over every client's test samples.

Judgment: paired over seeds (one data split and placement per seed), the Student-t interval
of the mean accuracy difference of DSC - FedAvg (noisy channel) and data stage - FedAvg
(ideal channel). ``holds`` when both lie above 0, ``violated`` when one lies below 0,
else ``inconclusive``. The paper's margins (+20% on MNIST with a CNN) are not expected here.
The noisy verdict is for the stated calibration (``NOISE_SCALE``); beside it, the ratio of the
noise variances of DSC's and FedAvg's aggregates, which the calibration does not change.

Eq. (5) has two readings (:data:`~cflbounds.algorithms.dsc.NOISE_READINGS`): the verdict uses
the default, independent noise on every upload (Theorem 1's noise sum, Sec. II-B's CSMA-CA);
the noisy channel is also run with eq. (5) as printed, one receiver noise per aggregate
("noisy per receiver"), and both comparisons and noise ratios are reported.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from cflbounds.algorithms.dsc import hierarchical_descent, hierarchy
from cflbounds.algorithms.dsc_grouping import Grouping, dsc_grouping
from cflbounds.algorithms.federated import client_accuracy, client_gradients
from cflbounds.algorithms.small_models import SoftmaxRegression, initial_parameters
from cflbounds.bounds import dsc as bounds
from cflbounds.claims import Verdict, VerifyContext
from cflbounds.claims.stats import mean_interval
from cflbounds.synthetic.digits import CLASSES, PIXELS, make_digit_clients
from cflbounds.synthetic.seeding import spawn_seeds
from cflbounds.synthetic.wireless import make_wireless_layout
from .experiment import grouping_columns, grouping_evidence, grouping_note

CONFIDENCE = 0.95
ACCURACY = {
    "smoke": {"clients": 50, "seeds": 4, "rounds": 40},
    "default": {"clients": 50, "seeds": 12, "rounds": 100},
    "paper": {"clients": 50, "seeds": 40, "rounds": 300},
}
STEP_SIZE, NOISE_SCALE = 1.0, 10.0
METHODS = {"DSC": "both", "data stage": "data", "FedAvg": None}
CHANNELS = {"noisy": (NOISE_SCALE, "per-upload"), "noisy per receiver": (NOISE_SCALE, "per-receiver"),
            "ideal": (0.0, "per-upload")}


def _aggregate_noise(tree, reading="per-upload") -> np.ndarray:
    """Variance ``E||noise||^2`` of the aggregate the BS applies (eqs. 2, 5), per problem, with
    the data shares ``G_k = |D_k| / |D_l|`` (eq. 3 at equal angles): per upload
    ``sum_l G_l^2 sigma_l^2 + sum_l sum_k G_l^2 G_k^2 sigma_k^2`` (Theorem 1's noise sum with
    ``G_l G_k`` as the client weight); per receiver (eq. 5 as printed)
    ``max_l G_l^2 sigma_l^2 + sum_l G_l^2 max_k G_k^2 sigma_k^2``."""
    share = tree.data_sizes / tree.of_group(tree.group_sums(tree.data_sizes))
    if reading == "per-receiver":
        leaders = tree.group_max((share**2 * tree.client_noise)[..., None])[..., 0]  # (B, L)
        G_l2 = tree.group_weights**2
        return ((G_l2 * tree.group_noise).amax(-1) + (G_l2 * leaders).sum(-1)).cpu().numpy()
    client_weight = (tree.of_group(tree.group_weights) * share).cpu().numpy()
    return np.array([bounds.noise_factor(G_l, sigma_l, w_k, sigma_k, g) for G_l, sigma_l, w_k, sigma_k, g in zip(
        tree.group_weights.cpu().numpy(), tree.group_noise.cpu().numpy(), client_weight, tree.client_noise.cpu().numpy(),
        tree.groups.cpu().numpy())])


def accuracy_table(ctx: VerifyContext) -> pd.DataFrame:
    """One row per (seed, channel, method): the final pooled test accuracy and the noise
    variance of the method's aggregate (:func:`_aggregate_noise`)."""
    cfg = ACCURACY[ctx.scale]
    seeds = spawn_seeds(ctx.seed, cfg["seeds"], 7)
    data = make_digit_clients(cfg["clients"], structure="label-skew", labels_per_client=2, batch_size=len(seeds),
                              seed=list(seeds), dtype="float64", device=ctx.device)
    layout = make_wireless_layout(cfg["clients"], batch_size=len(seeds), seed=list(seeds))
    counts, sizes = data.train.label_counts(CLASSES).cpu().numpy(), data.train.counts.cpu().numpy()
    model = SoftmaxRegression(PIXELS, CLASSES)
    start = initial_parameters(model, seeds, 1, dtype=torch.float64, device=ctx.device)[:, 0]

    def gradients(w):  # (B, S, P) -> (B, S, K, P)
        return client_gradients(model, w[:, None], data.train)[0].transpose(1, 2)

    rows = []
    for method, stages in METHODS.items():
        grouping = Grouping.singletons(len(seeds), cfg["clients"]) if stages is None else \
            dsc_grouping(layout, counts, stages=stages)
        stage_columns = pd.DataFrame(grouping_columns(grouping)).to_dict("records")
        for channel, (noise, reading) in CHANNELS.items():
            tree = hierarchy(grouping, layout, sizes, noise_scale=noise, device=ctx.device)
            trace = hierarchical_descent(gradients, start, tree, step_sizes=STEP_SIZE, iterations=cfg["rounds"],
                                         seeds=seeds, record=False, noise_reading=reading)
            accuracy = client_accuracy(model, trace.final[:, None], data.test)[..., 0]  # (B, K)
            pooled = (accuracy * data.test.counts).sum(-1) / data.test.counts.sum(-1)
            rows += [{"seed": s, "channel": channel, "method": method, "accuracy": float(a), "groups": int(g),
                      "diverged": bool(d), "aggregate_noise": float(n), **stage}
                     for s, a, g, d, n, stage in zip(seeds, pooled.cpu().numpy(), grouping.groups, trace.diverged[:, 0],
                                                     _aggregate_noise(tree, reading), stage_columns)]
    return pd.DataFrame(rows)


def _difference(table, channel, method, baseline="FedAvg"):
    wide = table[table["channel"] == channel].pivot(index="seed", columns="method", values="accuracy")
    return (wide[method] - wide[baseline]).to_numpy()


def check_acc(ctx: VerifyContext) -> Verdict:
    """DSC.ACC: DSC beats FedAvg under a noisy channel; its data stage beats FedAvg in an ideal one."""
    table = accuracy_table(ctx)
    ctx.save_table("dsc_accuracy", table)
    comparisons = {"dsc_minus_fedavg_noisy": ("noisy", "DSC"), "data_minus_fedavg_ideal": ("ideal", "data stage"),
                   "dsc_minus_fedavg_ideal": ("ideal", "DSC"), "data_minus_fedavg_noisy": ("noisy", "data stage"),
                   "dsc_minus_fedavg_noisy_per_receiver": ("noisy per receiver", "DSC"),
                   "data_minus_fedavg_noisy_per_receiver": ("noisy per receiver", "data stage")}
    evidence, intervals = {}, {}
    for name, (channel, method) in comparisons.items():
        mean, low, high = mean_interval(_difference(table, channel, method), CONFIDENCE)
        evidence.update({name: float(mean), f"{name}_low": float(low), f"{name}_high": float(high)})
        intervals[name] = (low, high)
    means = table.groupby(["channel", "method"])["accuracy"].mean()
    for (channel, method), value in means.items():
        evidence[f"accuracy_{method.replace(' ', '_').lower()}_{channel.replace(' ', '_')}"] = float(value)
    for channel, suffix in (("noisy", ""), ("noisy per receiver", "_per_receiver")):
        noise = table[table["channel"] == channel].pivot(index="seed", columns="method", values="aggregate_noise")
        ratio = (noise["DSC"] / noise["FedAvg"]).to_numpy()  # calibration-free: both scale with noise_scale * gamma_ref
        evidence.update({f"aggregate_noise_ratio_dsc_over_fedavg{suffix}_median": float(np.median(ratio)),
                         f"aggregate_noise_ratio_dsc_over_fedavg{suffix}_min": float(ratio.min())})
    groupings = table[table["channel"] == "ideal"]
    for method, prefix in (("DSC", "dsc_"), ("data stage", "data_stage_")):
        evidence.update({prefix + k: v for k, v in grouping_evidence(groupings[groupings["method"] == method]).items()})
    evidence.update({"seeds": int(table["seed"].nunique()), "noise_scale": NOISE_SCALE, "step_size": STEP_SIZE,
                     "rounds": ACCURACY[ctx.scale]["rounds"], "clients": ACCURACY[ctx.scale]["clients"],
                     "diverged_runs": int(table["diverged"].sum())})
    claimed = [intervals["dsc_minus_fedavg_noisy"], intervals["data_minus_fedavg_ideal"]]
    verdict = _direction(claimed)
    printed = _direction([intervals["dsc_minus_fedavg_noisy_per_receiver"], intervals["data_minus_fedavg_ideal"]])
    pct = lambda name: f"{100 * evidence[name]:+.2f} pts [{100 * evidence[name + '_low']:+.2f}, " \
                       f"{100 * evidence[name + '_high']:+.2f}]"
    ratio = lambda suffix: (f"{evidence[f'aggregate_noise_ratio_dsc_over_fedavg{suffix}_median']:.3g}x FedAvg's "
                            f"(median over seeds, min {evidence[f'aggregate_noise_ratio_dsc_over_fedavg{suffix}_min']:.3g}x)")
    summary = (f"noisy channel (per-link noise variance {NOISE_SCALE:g} x gamma_ref/gamma, gamma_ref the SNR at 50 m; a "
               f"calibration, the paper's SNRs would bury any gradient), independent noise per upload: DSC - FedAvg = "
               f"{pct('dsc_minus_fedavg_noisy')}; ideal channel: data stage - FedAvg = {pct('data_minus_fedavg_ideal')} "
               f"(95% paired t-intervals over {evidence['seeds']} seeds); the data "
               f"{'support' if verdict == 'holds' else 'do not support'} the paper's direction at this calibration. "
               f"DSC's aggregate carries noise of variance {ratio('')}; the ratio is free of the calibration. "
               f"Eq. 5 as printed (one receiver noise per aggregate, over-the-air): DSC - FedAvg = "
               f"{pct('dsc_minus_fedavg_noisy_per_receiver')}, noise variance {ratio('_per_receiver')}; under that "
               f"reading the verdict would be '{printed}'")
    summary += grouping_note(evidence, "dsc_") + grouping_note(evidence, "data_stage_")
    return Verdict(
        "DSC.ACC", verdict, evidence, ctx.seed, int(evidence["seeds"]), CONFIDENCE, summary,
        plot=[_plot(table)],
        details={"setting": f"digits, {evidence['clients']} clients x 2 labels (label skew), softmax regression, "
                            f"{evidence['rounds']} rounds of full-gradient hierarchical aggregation (eqs. 2-4, eq. 3 "
                            f"angle weights), lambda = {STEP_SIZE}",
                 "noise": f"noisy channel: every upload carries independent Gaussian noise of variance {NOISE_SCALE} x "
                          "gamma_ref / gamma of its own link (gamma_ref: SNR to the BS at 50 m): client -> leader and "
                          "leader -> BS for DSC, client -> BS for FedAvg (orthogonal uploads, CSMA-CA as Sec. II-B, "
                          "and the per-upload noise sum of Theorem 1); the verdict's reading",
                 "noise_printed": "noisy per receiver: eq. (5) as printed, y = sum_l h_l p_l s_l + n_0, one receiver "
                                  "noise per aggregate (at each leader and at the BS) of variance max_i G_i^2 sigma_i^2 "
                                  "(channel inversion limited by the weakest weighted link), weights from noise-free "
                                  "gradients; reported beside the verdict (the paper states both readings)",
                 "grouping": "stage 1 on eq. (7) as printed (-gamma_ij^2 off the diagonal, median preference), stage 2 "
                             "on eq. (12) inside each primary group; standard AP with scikit-learn's tie-breaking noise "
                             "seeded from each seed (per-stage convergence and left-overs in dsc_*/data_stage_*)",
                 "margins": "the paper's +20% (MNIST, CNN) is not expected at this scale; the verdict is about the "
                            "direction only"},
    )


def _direction(intervals) -> str:
    """holds when every interval lies above 0, violated when one lies below 0."""
    if any(high < 0 for _, high in intervals):
        return "violated"
    return "holds" if all(low > 0 for low, _ in intervals) else "inconclusive"


def _plot(table):
    summary = table.groupby(["channel", "method"])["accuracy"].agg(["mean", "std", "count"])
    series = []
    for method in METHODS:
        rows = [summary.loc[(channel, method)] for channel in CHANNELS]
        mean = [float(r["mean"]) for r in rows]
        half = [float(1.96 * r["std"] / np.sqrt(r["count"])) for r in rows]
        series.append({"label": method, "y": mean, "low": [m - h for m, h in zip(mean, half)],
                       "high": [m + h for m, h in zip(mean, half)]})
    return {"kind": "bar", "x": [f"{c} channel" for c in CHANNELS], "series": series, "xlabel": "channel",
            "ylabel": "pooled test accuracy", "title": "DSC.ACC: global-model accuracy by method (mean, 95% interval)"}
