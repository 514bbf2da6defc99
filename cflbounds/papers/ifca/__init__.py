"""IFCA (Ghosh et al., An Efficient Framework for Clustered Federated Learning): its claims and how each
is measured and judged: the theory checks (:mod:`.theory`), Fig. 2's success probability
(:mod:`.success`) and Table 1 on rotated digits (:mod:`.digits`).

``CLAIMS`` joins the other papers' in :mod:`cflbounds.papers`, which cflbounds' own
``pyproject.toml`` registers in the entry-point group ``cflbounds.claims``, exactly as a plugin
package registers its claims.
"""
from functools import partial

from cflbounds.bounds import ifca as bounds
from cflbounds.claims import Claim
from . import digits, success, theory
from . import domain as domains

claim = partial(Claim, paper="IFCA", reference="Ghosh et al., An Efficient Framework for Clustered Federated Learning (ifca.txt)")

CLAIMS = [
    claim("IFCA.A1", "Initialization ||theta_j^(0) - theta*_j|| <= Delta/4.", theory.check_a1, bounds.assumption1,
          no_domain="an initialisation condition the experiment chooses, not a measured quantity: the T2c domain "
                    "draws its models inside Assumption 6's (stricter or equal) ball by construction and states the "
                    "row on every instance."),
    claim("IFCA.A2", "max||theta*|| <~ 1, sigma <~ 1, n' >~ ((rho+1)/rho)^2 log m, d >~ log m, p >~ log m/m, "
          "p m n' >~ d, Delta >~ (sigma/p) sqrt(d/(m n')) + exp(-c (rho/(rho+1))^2 n').",
          theory.check_a2, bounds.assumption2,
          no_domain="conditions on the problem with unspecified constants in every >~ (read with C = 1 by the "
                    "check), not a bound on a measured quantity: there is nothing to exceed, only inequalities of "
                    "the parameters that delimit Thm 1's domain."),
    claim("IFCA.T1", "One step from ||theta_j - theta*_j|| <= Delta/4 with gamma = c1/p, w.p. >= 1 - 1/poly(m): "
          "||theta_j^+ - theta*_j|| <= 1/2 ||theta_j - theta*_j|| + c2 (sigma/p) sqrt(d/(m n')) "
          "+ c3 exp(-c4 (rho/(rho+1))^2 n').", theory.check_t1, bounds.theorem1,
          no_domain="the floor's c2, c3, c4 and the probability 1 - 1/poly(m) are unspecified universal constants, "
                    "so the bound has no value at one point: it is judged as a rate of the floor over m n'. (The "
                    "implied c2 could be maximised with c3 = 0, but a finite maximum of a budgeted search says "
                    "nothing about a universal constant; not attempted.)"),
    claim("IFCA.C1", "After T = log(Delta/(4 eps)) iterations the error is <= eps = c5 (sigma/p) sqrt(d/(m n')) "
          "+ c6 exp(-c4 (rho/(rho+1))^2 n').", theory.check_c1, bounds.corollary1,
          no_domain="eps carries the unspecified universal constants c4, c5, c6 (and T and the probability depend "
                    "on them): a rate claim over m n', judged by a log-log fit, with no value at a single point."),
    claim("IFCA.A3-6", "Strongly convex case: F^j lambda-strongly convex and L-smooth (A3); Var f <= eta^2 (A4); "
          "E||grad f - grad F^j||^2 <= v^2 (A5); init <= (1/4) sqrt(lambda/L) Delta, n' >~ k eta^2/(lambda^2 "
          "Delta^4), p >~ log(mn')/m, Delta >= O~(max{n'^(-1/5), m^(-1/6) n'^(-1/3)}) (A6).",
          theory.check_a36, bounds.assumption6, domain=domains.variance_domain()),
    claim("IFCA.T2", "gamma = 1/L: w.p. >= 1 - delta after T = (8L/(p lambda)) log(Delta/(2 eps)) iterations the error "
          "is <= eps <~ v k L log(mn')/(p^(5/2) lambda^2 delta sqrt(mn')) + eta^2 L^2 k log(mn')/(p^2 lambda^4 delta "
          "Delta^4 n') + O~(1/(n' sqrt(m))).", bound=bounds.theorem2,
          no_domain="with the constant of its <~ set to 1, eps >= Delta/2 (vacuous: T = 0 iterations) on every "
                    "problem one evaluation can afford (m n' <= 16384 here; eps < Delta/2 first needs m n' ~ 3e6, at "
                    "the most favourable d = 3, k = 2, Delta = sqrt 2, delta = 1/2), so a run could only confirm its "
                    "initialisation; its one-step form IFCA.T2c, with the same coefficients, is searched instead."),
    claim("IFCA.T2c", "Per-iteration contraction (1 - p lambda/(8L)) plus a floor O~(1/sqrt(mn') + 1/n' + "
          "1/(n' sqrt(m))).", theory.check_t2c, bounds.theorem2_contraction, domain=domains.contraction_domain()),
    claim("IFCA.F2", "Fig. 2: success probability (gradient averaging, no re-sampling, random init with restarts) "
          "increases with separation R, decreases with noise sigma, increases with m and n.", success.check_f2,
          no_domain="a qualitative trend of a figure (success probability monotone in R, sigma, m, n), not a bound "
                    "that one instance can exceed."),
    claim("IFCA.TAB1", "Table 1: IFCA > global model > local model in test accuracy (rotated digits).",
          digits.check_tab1,
          no_domain="an ordering of test accuracies on one real data set (Table 1), not a bound over a domain of "
                    "problem parameters."),
]
