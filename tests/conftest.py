"""Shared test settings."""
import os

import pytest
import torch
from hypothesis import settings

# The default run is deterministic (CI must not fail on an example it happened to draw this
# time); HYPOTHESIS_PROFILE=explore searches fresh examples, many more of them.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(scope="session", autouse=True)
def single_torch_thread():
    """One intra-op thread for the whole suite. The runs are thousands of small torch ops; with
    torch's default 2 OpenMP threads on a busy 2-core machine the threads spin-wait (measured
    7-50x slower, a Fig. 2 cell 0.3 s vs 17 s) while the results are bit-identical."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
