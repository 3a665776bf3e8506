"""Small data sets for the OSCBO tests (imported by module name: tests have no packages)."""

from __future__ import annotations

import torch

from tune_risk.gp.models import DTYPE
from tune_risk.oscbo import standardize


def make_data(n: int = 14, d: int = 3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` uniform inputs in ``[0,1]^d`` and standardised noisy targets of a smooth function."""
    generator = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=generator, dtype=DTYPE)
    f = torch.sin(6.0 * X[:, 0]) + X[:, 1] ** 2 - 0.5 * torch.cos(4.0 * X[:, -1])
    y = f + 0.1 * torch.randn(n, generator=generator, dtype=DTYPE)
    return X, standardize(y)[0]
