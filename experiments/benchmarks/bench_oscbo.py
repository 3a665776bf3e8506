"""Seconds per OSCBO round (FTPL: 50 projected-Adam steps on the closed form S5) against one MLL refit
(50 Adam steps on the exact NLML) at n = 110 points, one torch thread (issue 6, printed, not asserted).

    python experiments/benchmarks/bench_oscbo.py [--n 110] [--dim 5] [--repeats 5]

A round is ``OSCBOGame.observe``: the FTPL oracle plus the OMD and latch updates. Target: <= 0.5 s.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from tune_risk.gp.models import DTYPE
from tune_risk.oscbo import (
    FixedGP,
    GameData,
    OSCBOConfig,
    OSCBOGame,
    fit_lengthscale_mll,
    round_losses,
    standardize,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=110, help="data points (10 initial + 100 rounds in the paper)")
    parser.add_argument("--dim", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.uniform(size=(args.n, args.dim)), dtype=DTYPE)
    y = standardize(torch.sin(6 * X[:, 0]) + X[:, 1:].pow(2).sum(-1) + 0.05 * torch.randn(args.n, dtype=DTYPE))[0]
    n0 = 10
    game = OSCBOGame(OSCBOConfig(T=args.n - n0), args.dim)
    game.start(GameData(X[:n0], y[:n0], 0.01, list(range(n0))))
    game.history = [[k, 1.0] for k in range(n0, args.n - 1)]  # a full history of rounds
    game.rounds = args.n - n0 - 1
    row = args.n - 1
    mu, s2 = FixedGP(X[:row], y[:row], game.theta).predict(X[row:])
    losses = round_losses(float(y[row]), float(mu[0]), float(s2[0]), 0.01, 2.0, 2)
    data = GameData(X, y, 0.01, list(range(args.n)))

    def oscbo_round() -> None:
        state = game.state_dict()
        OSCBOGame.from_state_dict(state).observe(losses, row, data)

    def mll_refit() -> None:
        fit_lengthscale_mll(X, y, 0.01, game.theta)

    def botorch_mll() -> None:
        import warnings

        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from gpytorch.kernels import MaternKernel
        from gpytorch.means import ZeroMean
        from gpytorch.mlls import ExactMarginalLogLikelihood

        model = SingleTaskGP(X, y.unsqueeze(-1), train_Yvar=torch.full((args.n, 1), 0.01, dtype=DTYPE),
                             covar_module=MaternKernel(nu=2.5), mean_module=ZeroMean(), outcome_transform=None).to(DTYPE)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))

    print(f"n = {args.n}, d = {args.dim}, torch threads = {torch.get_num_threads()}, repeats = {args.repeats}")
    print("| what | median s | min s |\n|---|---|---|")
    for name, fn in (("OSCBO round (FTPL, 50 Adam steps)", oscbo_round),
                     ("MLL refit (Adam, 50 steps, exact NLML)", mll_refit),
                     ("BoTorch fit_gpytorch_mll (L-BFGS-B), reference", botorch_mll)):
        fn()  # warm-up
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        print(f"| {name} | {statistics.median(times):.3f} | {min(times):.3f} |")


if __name__ == "__main__":
    main()
