"""Short summaries whose numbers say what matters (issue 45, section 2): a falsify result's and a
searched verdict's summary is one short line (the word, measured/allowed with its interval, the
point), the rest in the fields the reports show; a point's coordinates print with the digits
that tell them from a rounder number and from their domain's edges, and the files keep the
exact values."""
import math

from hypothesis import given
from hypothesis import strategies as st

from cflbounds.falsify.run import confirmed_ratio_text, result_summary
from cflbounds.verify.domain import Parameter, format_coordinate, format_point
from conftest import examples


def test_the_issue_s_points():
    """A point at 0.9999989 of a domain that ends at 0.999999 is not printed as 1 (its
    violation exists only above 0.9995), and a 16-digit float prints four significant digits,
    its trailing zeros kept (not "0.01", a rounder number than it is)."""
    assert format_coordinate(0.9999989, (0.01, 0.999999)) == "0.9999989"
    assert format_coordinate(0.010000964778153307) == "0.01000"
    assert format_coordinate(0.87) == "0.87" and format_coordinate(4) == "4" and format_coordinate(2.0) == "2"
    assert format_coordinate(1e-7) == "1e-07" and format_coordinate(0.123456) == "0.1235"
    assert format_coordinate(math.inf) == "inf"
    parameters = [Parameter("eta_fraction", 0.01, 0.999999), Parameter("n", 1, 100, integer=True)]
    assert format_point({"eta_fraction": 0.9999989, "n": 7}, parameters) == "eta_fraction = 0.9999989, n = 7"


@given(low=st.floats(-1e6, 1e6), width=st.floats(1e-12, 1e6), share=st.floats(0, 1))
@examples(200)
def test_a_coordinate_is_printed_on_its_side_of_each_edge(low, width, share):
    """Read back, the printed value lies on the same side of each edge of its range as the
    value itself (equal to an edge only when it is that edge), and shows at least four
    significant digits or the value exactly."""
    high = low + width
    value = low + share * (high - low)
    if not low <= value <= high:
        return
    text = format_coordinate(value, (low, high))
    shown = float(text)
    for end in (low, high):
        assert (shown > end) - (shown < end) == (value > end) - (value < end), (value, text, low, high)
    digits = len(text.split("e")[0].replace("-", "").replace(".", "").lstrip("0"))
    assert shown == value or digits >= 4, (value, text)


def _result(outcome: str, **fields) -> dict:
    confirmed = {"ratio": 4.056, "interval": [4.033, 4.071], "trials": 20, "confidence": 0.95,
                 "point": "search best", "violated": outcome == "violated"}
    point = {"eta_fraction": 0.9999989, "noise": 0.000128734567, "clients": 4, "beta": 0.986654321}
    return {"id": "X.L2", "outcome": outcome, "evaluations": 412, "seconds": 31.5, "seed": 0, "confirmed": confirmed,
            "confirmation": {"summary": "mean of measured - bound over 20 fresh trials 0.31 [0.29, 0.33]",
                             "trials": 20, "inadmissible": 0},
            "counterexample": {"parameters": point, "seed": 123456789, "measured": 1.0, "bound": 0.2465,
                               "ratio": 4.0568} if outcome == "violated" else None,
            "raw_best": {"ratio": 4.2, "score": 1.43, "trials": 1},
            "coverage": {"statement": "no violating region over 0.013 of the admissible volume, at 95 %: ..."},
            "search": {"best": {"parameters": point}}, **fields}


def test_a_summary_is_one_short_line_and_the_rest_is_in_fields():
    parameters = [Parameter("eta_fraction", 0.01, 0.999999), Parameter("noise", 1e-4, 1, log=True),
                  Parameter("clients", 1, 8, integer=True), Parameter("beta", 0, 0.99)]
    violated = result_summary(_result("violated"), parameters)
    assert violated == ("violated: measured/allowed 4.056 [4.033, 4.071] at eta_fraction = 0.9999989, noise = "
                        "0.0001287, clients = 4, beta = 0.9867")
    none = result_summary(_result("no counterexample found"), parameters)
    assert none.startswith("no counterexample found: best measured/allowed 4.056 [4.033, 4.071] at eta_fraction")
    for text in (violated, none):  # the seed, the fresh trials' mean, the coverage: the report's tables
        assert len(text) < 160 and "123456789" not in text and "fresh trials" not in text and "coverage" not in text
    deterministic = {"ratio": 1.25, "interval": [0.5, 1.25], "trials": 20, "confidence": 1.0}
    assert confirmed_ratio_text(deterministic) == "1.25 (largest of 20)"
