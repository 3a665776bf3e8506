"""The plain GP-UCB loop of the OSCBO paper's comparison (docs/algorithms.md §4.1, §3.7; OSCBO App. D).

Every method shares the model of §3.1 (Matérn-5/2, outputscale 1, mean 0, ``sigma^2 = 0.01``,
unit-cube inputs, outputs standardised manually each round), the same ``D_0`` (10 scrambled-Sobol
points, seed = repetition, O-21), the budget and the acquisition ``mu + kappa sigma`` maximised by
BoTorch's ``optimize_acqf`` (q = 1, 5 restarts, 20 raw samples). Only the lengthscale (or, for OCBO,
SCGP and VanillaBO, the band) differs.

===============  =================================================================
method           what is played in round t
===============  =================================================================
``oscbo``        OSCBO's lengthscale (p = 2), kappa = sqrt(2)          §3
``oscbo-l1``     OSCBO with p = 1                                      §3
``gp-ucb-mll``   MLL refit (Adam, lr 0.01, 50 steps), kappa = sqrt(2)  §4.2
``ocbo``         MLL lengthscale, kappa = Phi^-1(LOO-PIT 0.9-quantile)  §4.3
``a-gp-ucb``     theta_0 / g_t                                          §4.4
``lb-gp-ucb``    balanced candidate lengthscales with elimination      §4.5
``scgp``         split mean/uncertainty lengthscales, calibrated kappa  §4.6
``vanilla-bo``   BoTorch default SingleTaskGP (MAP), kappa = sqrt(2)   §4.7
===============  =================================================================

Per round the loop logs the lengthscale played in that round, the losses of eqs. 6-7 of the played
band with ``p = 2`` for every method (coverage, width, ``V_t``: comparable diagnostics), and the
regrets. The OSCBO game itself is fed the losses with its own exponent ``p``, which enters both the
FTPL and the OMD objectives (S5, S7). Observations are noiseless (O-18).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from oscbo_harness.surrogates import OCBO, SCGP, Surrogate, VanillaBO, fixed_gp_surrogate
from oscbo_harness.tasks import Task
from tune_risk.engine.design import sobol_points
from tune_risk.gp.exact import DTYPE, standardize
from tune_risk.lengthscale.strategies import OSCBOStrategy, make_strategy
from tune_risk.oscbo.game import GameData
from tune_risk.oscbo.gp import NOISE
from tune_risk.oscbo.losses import round_losses
from tune_risk.risk.acquisition import maximize_on_unit_cube

logger = logging.getLogger(__name__)

METHODS = ("oscbo", "oscbo-l1", "gp-ucb-mll", "ocbo", "a-gp-ucb", "lb-gp-ucb", "scgp", "vanilla-bo")
_STRATEGY_OF = {"oscbo": "oscbo", "oscbo-l1": "oscbo-l1", "gp-ucb-mll": "mll", "a-gp-ucb": "a-gp-ucb",
                "lb-gp-ucb": "lb-gp-ucb"}


@dataclass
class BOResult:
    """One run: queried points, values, regrets and per-round diagnostics."""

    task: str
    method: str
    seed: int
    X: list[list[float]]  # unit cube, D_0 first
    values: list[float]
    n_init: int
    optimum: float | None
    rounds: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)  # the OSCBO game's lambda_init, omega, form

    def simple_regret(self, optimum: float | None = None) -> np.ndarray:
        """``f* - max_{j<=t} f(x_j)`` for ``t = 0..T`` (D_0 included, ``t = 0`` is D_0 alone)."""
        best = np.maximum.accumulate(np.asarray(self.values))[self.n_init - 1:]
        return self._optimum(optimum) - best

    def cumulative_regret(self, optimum: float | None = None) -> np.ndarray:
        """``sum_{s<=t} (f* - f(x_s))`` over BO rounds, ``t = 1..T``."""
        return np.cumsum(self._optimum(optimum) - np.asarray(self.values[self.n_init:]))

    def _optimum(self, optimum: float | None) -> float:
        value = optimum if optimum is not None else self.optimum
        if value is None:
            raise ValueError(f"task {self.task!r} has no known optimum: pass one (e.g. the best value found)")
        return float(value)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def maximize_ucb(surrogate: Surrogate, dim: int, seed: int, num_restarts: int = 5, raw_samples: int = 20) -> np.ndarray:
    """``argmax_{[0,1]^d} mu + kappa sigma`` of a ``Surrogate`` (latent sigma) with ``optimize_acqf`` (q = 1), seeded."""

    def ucb(X: Tensor) -> Tensor:
        mu, var = surrogate.predict(X)
        return mu + surrogate.kappa * var.sqrt()

    return maximize_on_unit_cube(ucb, dim, seed, num_restarts, raw_samples)


class _Method:
    """Adapter: a lengthscale strategy or a band surrogate behind one ``surrogate``/``observe`` pair."""

    def __init__(self, name: str, dim: int, steps: int, beta: float, seed: int, options: dict) -> None:
        self.name, self.kappa = name, math.sqrt(beta)
        self.strategy = None
        self.band = None
        if name in _STRATEGY_OF:
            self.strategy = make_strategy(_STRATEGY_OF[name], dim, T=steps, beta=beta, seed=seed, **options)
        elif name == "ocbo":
            self.band = OCBO(dim, beta)
        elif name == "scgp":
            self.band = SCGP(dim, seed, beta=beta)
        elif name == "vanilla-bo":
            self.band = VanillaBO(dim, beta)
        else:
            raise ValueError(f"unknown method {name!r}; valid methods are {', '.join(METHODS)}")

    def start(self, data: GameData) -> None:
        if self.strategy is not None:
            self.strategy.start(data)

    def surrogate(self, t: int, data: GameData) -> Surrogate:
        if self.strategy is not None:
            return fixed_gp_surrogate(data.X, data.y, self.strategy.propose(t, data), self.kappa)
        return self.band.surrogate(t, data.X, data.y)

    @property
    def feedback_p(self) -> int | None:
        """The exponent of eq. 7 the method learns from: OSCBO's ``p`` (S5 and S7), ``None`` for the others."""
        return self.strategy.game.config.p if isinstance(self.strategy, OSCBOStrategy) else None

    @property
    def settings(self) -> dict[str, Any]:
        """The OSCBO game's resolved ``lambda_init`` (``lambda_1``), ``omega`` and ``form``; ``{}`` for the others."""
        if not isinstance(self.strategy, OSCBOStrategy):
            return {}
        game = self.strategy.game
        return {"lambda_init": game.lambda_init, "omega": game.config.omega, "form": game.config.form}

    def observe(self, t: int, y_t: float, losses, key: int, data: GameData) -> None:
        if self.strategy is not None:
            self.strategy.observe(t, y_t, losses, key, data)


def run_bo(task: Task, method: str, seed: int, steps: int = 100, n_init: int = 10, beta: float = 2.0,
           num_restarts: int = 5, raw_samples: int = 20, p_diagnostic: int = 2, **options: Any) -> BOResult:
    """Run one method on one task for ``steps`` BO rounds after ``n_init`` Sobol points (seed ``seed``).

    ``options`` go to ``OSCBOConfig`` for the OSCBO methods (``lambda_init``, ``omega``, ``form``, ...);
    other methods take none. ``BOResult.settings`` records the OSCBO game's resolved settings.
    """
    if options and method not in ("oscbo", "oscbo-l1"):
        raise ValueError(f"options {sorted(options)} configure the OSCBO game; method={method!r} takes none")
    started = time.perf_counter()
    dim = task.dim
    X = [list(x) for x in sobol_points(dim, n_init, seed)]
    values = [task(np.asarray(x)) for x in X]
    handler = _Method(method, dim, steps, beta, seed, options)
    handler.start(_data(X, values))
    rounds: list[dict[str, Any]] = []
    for t in range(1, steps + 1):
        data = _data(X, values)
        _, y_mean, y_std = standardize(torch.as_tensor(values, dtype=DTYPE))
        surrogate = handler.surrogate(t, data)
        round_seed = int(np.random.SeedSequence([seed, t, 1]).generate_state(1)[0])
        x_t = maximize_ucb(surrogate, dim, round_seed, num_restarts, raw_samples)
        f_t = task(x_t)
        with torch.no_grad():
            mu, var = surrogate.predict(torch.as_tensor(x_t, dtype=DTYPE).unsqueeze(0))
        mu_t, var_t = float(mu[0]), float(var[0])
        y_t = (f_t - y_mean) / y_std  # constants of D_{t-1} (O-15)
        losses = round_losses(y_t, mu_t, var_t, NOISE, beta, p_diagnostic)  # logged only
        p_game = handler.feedback_p
        feedback = losses if p_game in (None, p_diagnostic) else round_losses(y_t, mu_t, var_t, NOISE, beta, p_game)
        X.append([float(v) for v in x_t])
        values.append(f_t)
        handler.observe(t, y_t, feedback, len(X) - 1, _data(X, values))
        band = max(surrogate.kappa, 0.0) * math.sqrt(var_t + surrogate.noise)
        theta = surrogate.theta  # played in round t (a strategy's own theta has moved on to theta_t)
        rounds.append({
            "theta": None if theta is None else list(theta), "kappa": surrogate.kappa,
            "calibration": losses.calibration, "sharpness": losses.sharpness,
            "covered": abs(y_t - mu_t) <= band, "width": 2.0 * band, **_extra(handler, surrogate),
        })
    add_running_diagnostics(rounds, values, n_init)
    return BOResult(task.name, method, seed, X, values, n_init, task.optimum, rounds, time.perf_counter() - started,
                    handler.settings)


RUNNING_FIELDS = ("t", "value", "coverage", "mean_width", "V", "V_plus", "V_plus_sum")


def add_running_diagnostics(rounds: list[dict[str, Any]], values: list[float], n_init: int) -> None:
    """Fill ``RUNNING_FIELDS`` of each round, in place, from the rounds' own fields.

    ``t``; ``value = f(x_t)``; the running coverage ``p_t = (1/t) sum_{j<=t} covered_j`` (eq. 3); the running
    mean band width; ``V_t = sum_{j<=t} L^c_j`` (Alg. 1 line 17, p = 2 diagnostic), ``max(V_t, 0)`` and
    ``sum_{j<=t} max(L^c_j, 0)`` (O-22). One function for the loop and the run store, so that a stored run,
    which keeps only the per-round fields, gives back these fields bit for bit.
    """
    covered = 0
    width_sum = V = V_plus = 0.0
    for t, row in enumerate(rounds, start=1):
        covered += int(row["covered"])
        width_sum += row["width"]
        V += row["calibration"]
        V_plus += max(row["calibration"], 0.0)
        row.update(t=t, value=values[n_init + t - 1], coverage=covered / t, mean_width=width_sum / t, V=V,
                   V_plus=max(V, 0.0), V_plus_sum=V_plus)


def _data(X: list[list[float]], values: list[float]) -> GameData:
    """``D`` with outputs standardised by the constants of ``D`` itself (§3.1)."""
    y, _, _ = standardize(torch.as_tensor(values, dtype=DTYPE))
    return GameData(torch.as_tensor(X, dtype=DTYPE), y, NOISE, list(range(len(X))))


def _extra(handler: _Method, surrogate: Surrogate) -> dict[str, Any]:
    extra = {k: (list(v) if isinstance(v, tuple) else v) for k, v in surrogate.info.items()}
    strategy = handler.strategy
    if strategy is not None and getattr(strategy, "game", None) is not None:
        last = strategy.game.diagnostics[-1]
        extra.update({"lambda": last["lambda"], "phase": last["phase"], "oscbo_V": last["V"]})
    return extra
