"""A counterexample on disk: written by ``cflbounds falsify``, replayed by ``--replay FILE``, and
turned into a pytest regression test by ``--emit-test FILE``.

The file holds the claim, the point, the seed of its instance, what was measured against the
bound with the assumption rows, and how it was found and confirmed. Replaying evaluates that
point alone at that seed, exactly as the falsifier's last evaluation did, so the ratio
reproduces exactly (on the same device and versions).
"""
from __future__ import annotations

import json
import pprint
import re
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from .._files import atomic_write_text, safe_file_name
from .._read_json import read_json
from .._schemas import COUNTEREXAMPLE_FILE
from .._validation import InvalidParameterError
from ..verify.context import VerifyContext
from ..verify.contract import checked_evaluate
from ..verify.domain import Domain, Instance
from ..verify.registry import get_claim
from ..verify.verdict import json_safe

__all__ = ["counterexample_file", "read_counterexample", "replay_counterexample", "replay_domain",
           "write_counterexample", "emit_test"]


def counterexample_file(directory, claim_id: str) -> Path:
    """Where a run in ``directory`` keeps the counterexample of ``claim_id``:
    ``counterexamples/<ID>.json`` (a claim ID is a short file name: :data:`~cflbounds.verify.claim.ID_LENGTH`)."""
    return Path(directory) / "counterexamples" / f"{claim_id}.json"


def write_counterexample(directory, result: dict) -> Path:
    """``result``'s counterexample (a dict of :func:`cflbounds.falsify.run.falsify_claim`) as JSON
    in the run directory ``directory`` (:func:`counterexample_file`, never outside it); returns its path."""
    path = counterexample_file(directory, safe_file_name(result["id"], "the counterexample of"))
    record = {"cflbounds": __version__, "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "id": result["id"], "device": result["device"], **result["counterexample"],
              "confirmation": result["confirmation"], "search_seed": result["seed"]}
    atomic_write_text(path, json.dumps(json_safe(record), indent=2, allow_nan=False), within=directory)
    return path


def read_counterexample(path) -> dict:
    """The counterexample in ``path``, checked against its schema
    (:data:`cflbounds._schemas.COUNTEREXAMPLE_FILE`) before a replay uses it: a clear one-line
    error names the file, the field and what is wrong (so that a replay's failure is the
    claim's, never the file's). Its ratio written as ``"inf"`` comes back as a float."""
    record = read_json(path, COUNTEREXAMPLE_FILE, what="a counterexample file of `cflbounds falsify`")
    record["ratio"] = float(record["ratio"])  # json_safe wrote a non-finite ratio as "inf"
    return record


def replay_domain(record: dict) -> Domain:
    """The domain of the counterexample's claim, the point checked to lie in it (a clear
    one-line :class:`InvalidParameterError` otherwise: the file, not the claim, is wrong)."""
    claim = get_claim(record["id"])
    if claim.domain is None:
        raise InvalidParameterError(f"Claim {record['id']} declares no domain: nothing to replay.")
    try:
        claim.domain.check_point(record["parameters"])
    except (ValueError, TypeError) as error:
        raise InvalidParameterError(f"The counterexample of {record['id']} is not a point of its domain: {error}") \
            from None
    return claim.domain


def replay_counterexample(record: dict, device: str | None = None) -> Instance:
    """Evaluate the counterexample's point alone at its seed (the claim must declare a domain),
    checked against the Domain contract as the search's evaluations are."""
    domain = replay_domain(record)
    ctx = VerifyContext(seed=int(record.get("search_seed", 0)), device=device or record.get("device", "cpu"))
    return checked_evaluate(domain, [dict(record["parameters"])], [int(record["seed"])], ctx, record["id"])[0]


def emit_test(path: Path, record: dict) -> Path:
    """A pytest file that fails while the counterexample stands: it replays the point and asserts
    the claim holds there (``measured <=`` what the claim allows: the bound, with a deterministic
    claim's numerical tolerance)."""
    name = re.sub(r"\W+", "_", record["id"].lower()).strip("_")
    text = f'''"""Regression test emitted by `cflbounds falsify {record["id"]}` (search seed {record.get("search_seed")}).

The falsifier found {record["id"]} violated at this point (measured / bound = {record["ratio"]:.6g},
confirmed on fresh seeds); this test replays it and fails while the claim is violated there.
"""
from cflbounds.falsify import replay_counterexample
from cflbounds.verify.registry import get_claim

COUNTEREXAMPLE = {pprint.pformat(json_safe({key: record[key] for key in ("id", "parameters", "seed", "ratio", "device",
                                                                          "search_seed") if key in record}),
                                  sort_dicts=False)}


def test_{name}_holds_at_the_falsifier_counterexample():
    instance = replay_counterexample(COUNTEREXAMPLE)
    assert instance.admissible, "the counterexample no longer meets the claim's assumptions"
    allowed = get_claim(COUNTEREXAMPLE["id"]).domain.allowed(instance)
    assert instance.measured <= allowed, (
        f"{{COUNTEREXAMPLE['id']}} violated at {{COUNTEREXAMPLE['parameters']}} (seed {{COUNTEREXAMPLE['seed']}}): "
        f"measured {{instance.measured:.6g}} > bound {{instance.bound:.6g}}")
'''
    atomic_write_text(Path(path), text)
    return Path(path)
