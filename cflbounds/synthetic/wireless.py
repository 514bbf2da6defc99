"""The wireless setting of DSC (Sun et al., ``seeds/dsc.txt``, Sec. II-B and IV-A).

K single-antenna clients are placed uniformly at random in a square of side 100 m with the
base station (BS) at its centre (the origin). Large-scale path loss (Sec. IV-A, from [16]):

    PL(d) = G_tx G_rx (c / (4 pi f_c d))^P,   G_BS = 5 dBi, G_D = 0 dBi, f_c = 915 MHz, P = 3.76,

and the received SNR of a transmission with power ``p`` = 0.1 W over noise power 0.001 W is
``gamma = p PL(d) / sigma_n0^2`` (Sec. II-B: ``gamma_k = p_k |h_k|^2 / sigma_n0^2`` to the BS,
``gamma_jk = p_k |h_jk|^2 / sigma_n0^2`` from client k to client j; ``|h|^2`` is the path gain,
fixed over rounds as the paper assumes). A client-to-client link has both ends at G_D (the
paper does not state it). Distances are floored at ``min_distance`` (1 m): the far-field model
diverges at d -> 0.

Gamma (eq. 6) holds gamma_k on its diagonal and gamma_ij off it; it is symmetric.

With the paper's constants the SNRs are tiny (about -35 dB at 1 m from the BS and -100 dB at
70 m), so a noise variance ``E_s / gamma`` with unit signal energy would bury any gradient.
Upload noise is therefore calibrated (:func:`upload_noise_variance`): a link's noise variance
is ``noise_scale * gamma_ref / gamma`` with ``gamma_ref`` the SNR to the BS at
``reference_distance`` (50 m); the ratios between links are the paper's path loss.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from .._validation import ArrayLike, Constraint, Interval, validate_params
from .seeding import BATCH_CONSTRAINTS, problem_seeds, stream

__all__ = ["ChannelConstants", "PAPER_CHANNEL", "WirelessLayout", "make_wireless_layout", "layout_from_positions",
           "upload_noise_variance"]

SPEED_OF_LIGHT = 299_792_458.0
_STREAM_PLACEMENT = 41  # the placement stream of a problem seed (independent of its other draws)


@dataclass(frozen=True)
class ChannelConstants:
    """The link budget of Sec. IV-A (linear units except the gains in dBi)."""

    bs_gain_dbi: float = 5.0
    client_gain_dbi: float = 0.0
    carrier_hz: float = 915e6
    exponent: float = 3.76
    transmit_power_w: float = 0.1
    noise_power_w: float = 0.001
    min_distance: float = 1.0

    def snr(self, distance, *, to_bs: bool) -> np.ndarray:
        """``gamma = p G_tx G_rx (c/(4 pi f_c d))^P / sigma_n0^2`` at ``distance`` metres."""
        gain_dbi = self.client_gain_dbi + (self.bs_gain_dbi if to_bs else self.client_gain_dbi)
        distance = np.maximum(np.asarray(distance, dtype=float), self.min_distance)
        path_gain = 10 ** (gain_dbi / 10) * (SPEED_OF_LIGHT / (4 * math.pi * self.carrier_hz * distance)) ** self.exponent
        return self.transmit_power_w * path_gain / self.noise_power_w


PAPER_CHANNEL = ChannelConstants()


@dataclass(frozen=True, eq=False)
class WirelessLayout:
    """``B`` independent placements of ``K`` clients and their SNRs (float64 numpy).

    ``positions`` ``(B, K, 2)`` in metres (BS at the origin); ``snr_to_bs`` ``(B, K)``
    (gamma_k); ``snr_between`` ``(B, K, K)`` (gamma_jk, zero diagonal); ``gamma`` is eq. (6).
    """

    positions: np.ndarray
    snr_to_bs: np.ndarray
    snr_between: np.ndarray
    side: float
    channel: ChannelConstants
    seeds: tuple[int, ...]

    @property
    def batch_size(self) -> int:
        return self.positions.shape[0]

    @property
    def clients(self) -> int:
        return self.positions.shape[1]

    @property
    def gamma(self) -> np.ndarray:
        """The SNR matrix Gamma of eq. (6): gamma_k on the diagonal, gamma_ij off it."""
        eye = np.eye(self.clients, dtype=bool)
        return np.where(eye, self.snr_to_bs[:, :, None], self.snr_between)

    @property
    def distances(self) -> np.ndarray:
        """Client-to-client distances ``(B, K, K)`` in metres."""
        return np.linalg.norm(self.positions[:, :, None] - self.positions[:, None], axis=-1)

    def subset(self, index) -> "WirelessLayout":
        index = np.atleast_1d(np.asarray(index))
        return WirelessLayout(self.positions[index], self.snr_to_bs[index], self.snr_between[index], self.side,
                              self.channel, tuple(self.seeds[i] for i in index))


def _layout(positions, side, channel, seeds) -> WirelessLayout:
    eye = np.eye(positions.shape[1], dtype=bool)
    between = np.linalg.norm(positions[:, :, None] - positions[:, None], axis=-1)
    snr_between = np.where(eye, 0.0, channel.snr(between, to_bs=False))
    return WirelessLayout(positions, channel.snr(np.linalg.norm(positions, axis=-1), to_bs=True), snr_between,
                          side, channel, seeds)


@validate_params({
    "clients": [Interval(Integral, 1, None, closed="left")],
    "side": [Interval(Real, 0, None, closed="neither")],
    **BATCH_CONSTRAINTS,
    "channel": [Constraint(lambda c: isinstance(c, ChannelConstants), "a ChannelConstants")],
})
def make_wireless_layout(clients: int = 50, *, side: float = 100.0, batch_size: int = 1, seed=0,
                         channel: ChannelConstants = PAPER_CHANNEL) -> WirelessLayout:
    """Place ``clients`` uniformly in the square ``[-side/2, side/2]^2`` around the BS, for
    each of ``batch_size`` problems; placement ``b`` depends only on its own seed."""
    seeds = problem_seeds(seed, batch_size)
    positions = np.stack([stream(s, _STREAM_PLACEMENT).uniform(-side / 2, side / 2, size=(clients, 2)) for s in seeds])
    return _layout(positions, float(side), channel, seeds)


@validate_params({
    "positions": [Constraint(lambda v: ArrayLike.is_satisfied_by(v) and np.ndim(v) in (2, 3) and np.shape(v)[-1] == 2,
                             "an array (K, 2) or (B, K, 2) of finite coordinates")],
    "side": [Interval(Real, 0, None, closed="neither")],
    "seed": BATCH_CONSTRAINTS["seed"],
    "channel": [Constraint(lambda c: isinstance(c, ChannelConstants), "a ChannelConstants")],
})
def layout_from_positions(positions, *, side: float = 100.0, seed=0,
                          channel: ChannelConstants = PAPER_CHANNEL) -> WirelessLayout:
    """The layout of given client positions in metres (BS at the origin): ``(K, 2)`` for one
    problem or ``(B, K, 2)``; per-problem seeds as :func:`make_wireless_layout` (they seed
    what depends on the problem, e.g. DSC's tie-breaking)."""
    positions = np.asarray(positions, dtype=float)
    positions = positions[None] if positions.ndim == 2 else positions
    return _layout(positions, float(side), channel, problem_seeds(seed, positions.shape[0]))


@validate_params({
    "snr": [Constraint(lambda v: np.all(np.asarray(v, float) >= 0), "an array of non-negative SNRs")],
    "noise_scale": [Interval(Real, 0, None, closed="left")],
    "reference_distance": [Interval(Real, 0, None, closed="neither")],
    "channel": [Constraint(lambda c: isinstance(c, ChannelConstants), "a ChannelConstants")],
})
def upload_noise_variance(snr, noise_scale: float, *, reference_distance: float = 50.0,
                          channel: ChannelConstants = PAPER_CHANNEL) -> np.ndarray:
    """Noise variance ``E||n||^2`` of an upload over a link of SNR ``snr`` (eq. 5):
    ``noise_scale * gamma_ref / snr`` with ``gamma_ref`` the SNR to the BS at
    ``reference_distance``; an infinite SNR (no transmission) gives 0."""
    reference = channel.snr(reference_distance, to_bs=True)
    snr = np.asarray(snr, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(np.isinf(snr), 0.0, noise_scale * reference / snr)
