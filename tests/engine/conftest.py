"""Shared drivers and an independent reference for the engine tests (docs/algorithms.md §1-2, §5).

* ``run_sequential``: one worker, ask -> tell until ``DONE`` (the sequential algorithm, §1.10).
* ``Cluster``: ``W`` simulated workers; a random in-flight run finishes at every step (random
  arrival order), runs fail at random (``None``/NaN/inf), and ``pending_cancellations()`` are
  honoured by ``tell_cancelled``, at once or late (the run may then deliver its result after the
  cancellation request). It logs everything a test needs to check the engine's book-keeping.
* ``reference_bounds``: ``UCB^MV``/``LCB^MV`` rebuilt from scratch with BoTorch ``SingleTaskGP``
  models and gpytorch kernels, written from the spec (§1.4-1.5, eq. 19) rather than from the
  engine, so that the engine's hand-written conditioning is checked against an independent path.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import MaternKernel, RBFKernel

from tests.harness import launch_replicates
from tune_risk.benchmarks.objectives import HeteroscedasticObjective, get_objective, make_pool_table
from tune_risk.engine.core import Engine
from tune_risk.engine.records import DONE, WAIT, ConfigRecord, Replicate
from tune_risk.risk.model import RiskHyperparameters
from tune_risk.settings import EngineSettings

torch.set_num_threads(1)  # the test machine's cores are shared; these problems are tiny

FAILURE_VALUES = (None, float("nan"), float("inf"), float("-inf"))


# ---------------------------------------------------------------------------------------------- data
def pool_of(name: str = "branin", n: int = 48, seed: int = 0) -> tuple[HeteroscedasticObjective, np.ndarray]:
    """A synthetic objective and a Sobol pool of ``n`` unit-cube configurations."""
    objective = get_objective(name)
    X, _ = make_pool_table(objective, n, 1, seed)
    return objective, X


def sampler(objective: HeteroscedasticObjective):
    """Replicate return of a launched run: ``f(x) + rho(x) z_seed`` (deterministic in the seed)."""

    def sample(replicate: Replicate) -> float:
        return objective.sample(np.asarray(replicate.x), replicate.seed)

    return sample


# ---------------------------------------------------------------------------------------------- drivers
def run_sequential(engine: Engine, sample, max_steps: int = 100_000) -> Engine:
    """The sequential algorithm: launch one replicate, report it, repeat until ``DONE``."""
    for _ in range(max_steps):
        request = engine.ask()
        if request is DONE:
            return engine
        assert request is not WAIT, "one worker and nothing in flight: the engine must not wait"
        engine.tell(request.run_id, sample(request))
    raise AssertionError("sequential run did not finish")


@dataclass
class Cluster:
    """``W`` simulated workers driving an engine (docs/algorithms.md §2.1).

    Attributes:
        workers: number of workers ``W``.
        seed: seed of the arrival order, failures and cancellation delays.
        p_fail: probability that a finishing run fails (``None``, NaN or +-inf).
        p_honour: per step, probability that a pending cancellation is carried out; below 1 the
            run may finish first and report a result after its cancellation was requested.
        p_duplicate: per step, probability of re-reporting an already reported run (must be ignored).
    """

    workers: int
    seed: int = 0
    p_fail: float = 0.0
    p_honour: float = 1.0
    p_duplicate: float = 0.0
    rng: np.random.Generator = field(init=False)
    in_flight: list[Replicate] = field(default_factory=list)
    launched: dict[int, Replicate] = field(default_factory=dict)
    told: dict[int, float | None] = field(default_factory=dict)  # run_id -> reported value
    accepted: dict[int, bool] = field(default_factory=dict)  # run_id -> tell() answer
    cancel_requested: set[int] = field(default_factory=set)  # ever listed by pending_cancellations
    cancelled: set[int] = field(default_factory=set)  # acknowledged with tell_cancelled
    cost_reported: float = 0.0
    steps: int = 0
    max_in_flight: int = 0  # largest number of runs in flight at once

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def step(self, engine: Engine, sample) -> bool:
        """One event (a cancellation pass, launches, one arrival); ``False`` once the run is over."""
        self.steps += 1
        self._cancel(engine)
        request = launch_replicates(engine, self.workers - len(self.in_flight), self.launched, self.in_flight)
        self.max_in_flight = max(self.max_in_flight, len(self.in_flight))
        if not self.in_flight:
            assert request is DONE, f"engine answered {request!r} with nothing in flight (deadlock)"
            return False
        if self.p_duplicate and self.told and self.rng.random() < self.p_duplicate:
            self._duplicate(engine)
        replicate = self.in_flight.pop(int(self.rng.integers(len(self.in_flight))))
        value = sample(replicate)
        if self.p_fail and self.rng.random() < self.p_fail:
            value = FAILURE_VALUES[int(self.rng.integers(len(FAILURE_VALUES)))]
        cost = float(self.rng.uniform(0.5, 1.5))
        self.told[replicate.run_id] = value
        self.accepted[replicate.run_id] = engine.tell(replicate.run_id, value, cost=cost)
        self.cost_reported += cost
        return True

    def run(self, engine: Engine, sample, max_steps: int = 20_000, on_step=None) -> Engine:
        """Step until the engine is done; ``on_step(engine, cluster)`` is called after each step."""
        for _ in range(max_steps):
            if not self.step(engine, sample):
                self._cancel(engine)
                return engine
            if on_step is not None:
                on_step(engine, self)
        raise AssertionError("cluster run did not finish")

    def _cancel(self, engine: Engine) -> None:
        for run_id in engine.pending_cancellations():
            self.cancel_requested.add(run_id)
            running = [r for r in self.in_flight if r.run_id == run_id]
            if running and self.rng.random() < self.p_honour:
                self.in_flight.remove(running[0])
                cost = float(self.rng.uniform(0.0, 1.0))
                engine.tell_cancelled(run_id, cost=cost)
                self.cancelled.add(run_id)
                self.cost_reported += cost

    def _duplicate(self, engine: Engine) -> None:
        run_id = list(self.told)[int(self.rng.integers(len(self.told)))]
        before = engine.state_dict()
        assert engine.tell(run_id, 0.123, cost=1.0) is False, "a second result for a run was accepted"
        assert engine.state_dict() == before, "a duplicate result changed the engine state"


# ---------------------------------------------------------------------------------------------- helpers
def bo_records(engine: Engine) -> list[ConfigRecord]:
    return [r for r in engine.records if r.phase == "bo"]


def decisions(engine: Engine) -> list[tuple[int | None, int, str]]:
    """``(pool row x_t, k_t, stop reason)`` of every BO round, in proposal order."""
    return [(r.pool_index, r.n_incorporated, r.status) for r in bo_records(engine)]


def runs_of(engine: Engine, config_id: int) -> list:
    return [run for run in engine.runs.values() if run.config_id == config_id]


def round_warp(engine: Engine, record: ConfigRecord | None = None):
    """The output warp of ``record``'s round (its snapshot), or the engine's current one."""
    if record is None or record.snapshot is None:
        return engine.warp
    index = engine.snapshots[record.snapshot].warp_index
    return None if index is None else engine.warps[index]


def round_hyperparameters(engine: Engine, record: ConfigRecord) -> RiskHyperparameters:
    """The hyperparameters of ``record``'s round (its snapshot)."""
    return engine.snapshots[record.snapshot].hyperparameters


def processed_stats(engine: Engine, record: ConfigRecord, k: int | None = None, warp="current") -> tuple[float, float]:
    """Sample mean and unbiased variance (eq. 7) of the first ``k`` processed returns, by numpy,
    with ``warp`` (default: the engine's current warp)."""
    values = np.asarray(record.incorporated_values()[: k if k is not None else record.n_incorporated])
    warp = engine.warp if warp == "current" else warp
    if warp is not None:
        values = np.asarray(warp(values))
    return float(values.mean()), float(values.var(ddof=1))


def has_data(engine: Engine, record: ConfigRecord) -> bool:
    """Configurations that enter the GPs: finished initial design, or BO with ``k >= k_min``."""
    if record.phase == "initial":
        return record.status == "initial"
    return record.n_incorporated >= engine.settings.k_min


# ---------------------------------------------------------------------------------------------- reference
def _kernel(kind: str, lengthscale: tuple[float, ...]):
    d = len(lengthscale)
    kernel = RBFKernel(ard_num_dims=d) if kind == "rbf" else MaternKernel(nu=2.5, ard_num_dims=d)
    kernel = kernel.to(torch.float64)
    kernel.lengthscale = torch.tensor([lengthscale], dtype=torch.float64)
    return kernel


def _standardization(y: torch.Tensor, frozen: tuple[float, float], mode: str) -> tuple[float, float]:
    if mode == "frozen":
        return frozen
    mean = float(y.mean())
    std = float(y.std()) if y.numel() > 1 else 1.0
    return mean, (std if std > 1e-8 else 1.0)


def reference_gp(hp, X, y, noise_raw, mode):
    """BoTorch ``SingleTaskGP`` with fixed noise, given hyperparameters, manual standardisation.

    Returns ``predict(Xq) -> (mean, std)`` of the latent function in raw units.
    """
    y_mean, y_std = _standardization(y, (hp.y_mean, hp.y_std), mode)
    noise = torch.full_like(y, hp.noise) if noise_raw is None else (noise_raw / y_std**2).clamp_min(1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SingleTaskGP(
            X, ((y - y_mean) / y_std).unsqueeze(-1), train_Yvar=noise.unsqueeze(-1),
            covar_module=_kernel(hp.kernel, hp.lengthscale), outcome_transform=None,
        ).to(torch.float64)
    model.mean_module.constant = torch.tensor(hp.constant, dtype=torch.float64)
    model.eval()

    def predict(Xq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            posterior = model.posterior(Xq)
        mean = posterior.mean.squeeze(-1) * y_std + y_mean
        return mean, posterior.variance.squeeze(-1).clamp_min(1e-12).sqrt() * y_std

    return predict


def reference_predict(rows, hp: RiskHyperparameters, settings: EngineSettings, Xq: torch.Tensor, rho_bar_sq: float):
    """``(mu_f, sd_f, mu_var, sd_var)`` at ``Xq`` from data rows ``(x, m, s2, k)`` (§1.4, eq. 19);
    ``rho_bar_sq`` is the variance bound of the processed returns (A-5)."""
    X = torch.tensor([list(r[0]) for r in rows], dtype=torch.float64)
    m = torch.tensor([r[1] for r in rows], dtype=torch.float64)
    s2 = torch.tensor([r[2] for r in rows], dtype=torch.float64)
    k = torch.tensor([float(r[3]) for r in rows], dtype=torch.float64)
    rho4 = rho_bar_sq**2
    var_noise = {
        "learned": None,
        "theory": torch.full_like(k, 2 * rho4 / (settings.k_min - 1)),
        "k_aware": 2 * rho4 / (k - 1),
    }[settings.var_noise]
    kappa_acq = math.sqrt(settings.beta) if settings.beta_convention == "sqrt" else settings.beta
    var_gp = reference_gp(hp.variance_gp, X, s2, var_noise, settings.standardization)
    mu, sd = var_gp(X)
    ucb_var = mu + kappa_acq * sd
    sigma_hat = {  # eq. 19 and the A-4 alternatives
        "eq19": ucb_var.clamp(1e-6, rho_bar_sq) / k,
        "plugin": s2.clamp_min(1e-6) / k,
        "rahbo_code": s2.clamp_min(1e-6),
    }[settings.mean_noise]
    mean_gp = reference_gp(hp.mean_gp, X, m, sigma_hat, settings.standardization)
    return (*mean_gp(Xq), *var_gp(Xq))


def reference_bounds(rows, hp, settings, Xq, kappa, rho_bar_sq) -> tuple[torch.Tensor, torch.Tensor]:
    """``(UCB^MV, LCB^MV)`` at ``Xq`` (eqs. 9, 23, 24), unclamped ``LCB_var``."""
    mu_f, sd_f, mu_var, sd_var = reference_predict(rows, hp, settings, Xq, rho_bar_sq)
    a = settings.alpha
    return mu_f + kappa * sd_f - a * (mu_var - kappa * sd_var), mu_f - kappa * sd_f - a * (mu_var + kappa * sd_var)


def rho_bar_sq_of(engine: Engine, record: ConfigRecord | None = None) -> float:
    """Variance bound of the processed returns (A-5): the setting, else Popoviciu's bound of the output
    range ``[-bound, bound]`` of ``record``'s round warp (default: the current warp), else 0.25."""
    if engine.settings.rho_bar_sq is not None:
        return engine.settings.rho_bar_sq
    warp = round_warp(engine, record)
    return 0.25 if warp is None else warp.bound**2


def rows_before(engine: Engine, record: ConfigRecord) -> list[tuple]:
    """``D_{t-1}`` of a sequential run: data rows of every configuration proposed before ``record``,
    processed by the warp of ``record``'s round."""
    warp = round_warp(engine, record)
    return [
        (r.x, *processed_stats(engine, r, warp=warp), r.n_incorporated)
        for r in engine.records[: record.config_id] if has_data(engine, r)
    ]
