"""TEXTBOOK.GD-CONVEX, a claim in the short form: a bound and a domain, no designed experiment.

Gradient descent ``x+ = x - step grad f(x)`` on a convex, L-smooth ``f`` with ``0 < step <= 1/L``
satisfies ``f(x_T) - f* <= ||x_0 - x*||^2 / (2 step T)`` (Garrigos & Gower, *Handbook of
convergence theorems for (stochastic) gradient methods*, arXiv:2301.11235, 2023, the convex and
smooth case). ``cflbounds verify`` judges it by searching its domain (docs/own-theorem.md, "The
short form"); ``cflbounds falsify`` searches it longer.

The domain is every convex quadratic: gradient descent on ``x^T H x / 2`` acts on each
eigendirection of ``H`` apart, and both ``f(x_T) - f*`` and ``||x_0 - x*||^2`` are sums over the
directions, so the worst ratio is one direction's. One direction of curvature ``0 < h <= L`` is
the whole case, with ``L = 1`` and ``x_0 - x* = 1`` (scaling ``f`` or ``x`` changes both sides
alike). On quadratics the bound is loose: at most about ``1/(2e)``, 0.18, of it is reached.

TEXTBOOK.GD-CONVEX-PLANTED claims the accelerated rate ``||x_0 - x*||^2 / (2 step T^2)`` for
plain gradient descent: false from about ``T = 6`` on, where ``step h`` is near ``1/(2T)``.
"""
from numbers import Integral, Real

from cflbounds.claims import Claim, Domain, Instance, Interval, Parameter, validate_params

POSITIVE = [Interval(Real, 0, None, closed="neither")]
CONSTANTS = {"step": POSITIVE, "T": [Interval(Integral, 1, None, closed="left")], "distance": POSITIVE}


@validate_params(CONSTANTS)
def gd_convex_bound(step, T, distance):
    """||x_0 - x*||^2 / (2 step T): gradient descent on a convex L-smooth function, step <= 1/L.

    Parameters
    ----------
    step : float
        the step size, at most 1/L
    T : int
        the number of gradient steps
    distance : float
        ||x_0 - x*||, from the start to a minimiser
    """
    return distance**2 / (2 * step * T)


def gd_convex_domain(bound):
    def instance(point):  # f(x) = h x^2 / 2 with 0 < h <= L = 1 and x* = 0, from x_0 = 1
        x = 1.0
        for _ in range(point["T"]):
            x = x - point["step"] * point["h"] * x  # x <- x - step f'(x)
        return Instance(point["h"] * x**2 / 2, bound(point["step"], point["T"], 1.0))
    return Domain([Parameter("h", 1e-4, 1.0, log=True, simple=1.0, description="curvature, at most L = 1"),
                   Parameter("step", 1e-3, 1.0, log=True, simple=1.0, description="step size (L = 1)"),
                   Parameter("T", 1, 1000, integer=True, log=True, description="gradient steps")],
                  lambda points, seeds, ctx: [instance(p) for p in points])


GD_CONVEX = Claim("TEXTBOOK.GD-CONVEX", "Gradient descent with step <= 1/L on a convex L-smooth quadratic: "
                  "f(x_T) - f* <= ||x_0 - x*||^2 / (2 step T).", bound=gd_convex_bound,
                  domain=gd_convex_domain(gd_convex_bound), reference="Garrigos & Gower, arXiv:2301.11235 (2023)")


@validate_params(CONSTANTS)
def planted_gd_convex_bound(step, T, distance):
    return distance**2 / (2 * step * T**2)


planted_gd_convex_bound.__doc__ = (  # the claim's Parameters section: the same constants
    "A planted error: ||x_0 - x*||^2 / (2 step T^2), the accelerated rate, claimed for gradient descent.\n"
    + gd_convex_bound.__doc__.split("\n", 1)[1])

GD_CONVEX_PLANTED = Claim("TEXTBOOK.GD-CONVEX-PLANTED", "A planted error: the same with T^2 (the accelerated rate).",
                          bound=planted_gd_convex_bound, domain=gd_convex_domain(planted_gd_convex_bound),
                          reference="planted (false) twin of TEXTBOOK.GD-CONVEX")
