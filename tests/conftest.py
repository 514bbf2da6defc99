"""Shared test settings."""
import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def single_torch_thread():
    """One intra-op thread for the whole suite. The runs are thousands of small torch ops; with
    torch's default 2 OpenMP threads on a busy 2-core machine the threads spin-wait (measured
    7-50x slower, a Fig. 2 cell 0.3 s vs 17 s) while the results are bit-identical."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
