"""Shared fixtures for the OSCBO tests (one torch thread: the machine's cores are shared)."""

from __future__ import annotations

import pytest
import torch
from oscbo_helpers import make_data

torch.set_num_threads(1)


@pytest.fixture
def data():
    return make_data()
