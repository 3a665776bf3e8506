"""Lengthscale strategies inside the ERAHBO engine (docs/algorithms.md §3.10, OSCBO x ERAHBO).

With ``EngineSettings.lengthscale`` other than ``"mll"``, a strategy chooses the lengthscale of the
**mean GP** ``G_f``; everything else of ERAHBO stays as fitted: ``G_var``, eq. 19's noise ``Sigma_hat``,
the frozen output standardisation of ``m_hat``. The mean GP becomes Matérn-5/2 with outputscale 1
and mean 0 (the OSCBO model), with an isotropic lengthscale.

* **Start** (after the initial design): ``theta_0`` = MLL fit on ``D_0`` with per-point noise ``Sigma_hat``.
* **Round start** (the engine's round boundary): ``theta_{t-1}`` = ``strategy.propose(t)`` becomes part of
  the round's model snapshot, so it is played for the whole round: acquisition, ``B_t``, every
  ``UCB^MV(x_t; k)`` and ``Sigma_hat``, even while later rounds play other values (asynchronous mode).
* **Round end** (the round stops sampling): the feedback uses the final ``(m_hat_t, k_t)`` under the
  round's snapshot::

      z_t = (m_hat_t - mu_{f,t-1}(x_t)) / sqrt(Sigma_hat_t + sigma^2_{f,t-1}(x_t)),  L^c_t = |z_t|^p / beta^{p/2} - 1
      L^s_t = log(1 + sigma^2_{f,t-1}(x_t)/Sigma_hat_t) / log(1 + 1/Sigma_hat_t)

  in standardised units, with ``mu_f, sigma_f`` from the mean GP with the *played* lengthscale
  conditioned on the other configurations, ``beta = kappa_acq^2`` (the UCB's multiplier squared), and the
  FTPL history re-evaluated on the current ``(m_hat, Sigma_hat)`` (keys are configuration ids).
* ``T`` (for ``rho~`` and ``M``) is ``T_max = floor(N_max / k_min)``; 100 without a budget.
* The game's options come from ``EngineSettings.oscbo_lambda_init``, ``oscbo_omega`` and ``oscbo_form``
  (``RiskAwareSearch(lengthscale="oscbo", oscbo_lambda_init=...)`` passes them through). The default
  ``lambda_1`` is ``beta/log(1 + 1/Sigma_hat_j)`` averaged over the initial design (``nlml_balanced_lambda``).

The state (strategy plus the lengthscale played in each round) is plain Python, part of the
engine's ``state_dict``, so restores are exact.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Protocol

import torch
from torch import Tensor

from tune_risk.engine.records import ConfigRecord
from tune_risk.engine.snapshots import ModelSnapshot
from tune_risk.gp.exact import DTYPE
from tune_risk.gp.models import NOISE_FLOOR, ConditionedGP
from tune_risk.lengthscale.strategies import LengthscaleStrategy, make_strategy, strategy_from_state
from tune_risk.oscbo.game import GameData
from tune_risk.oscbo.losses import round_losses
from tune_risk.risk.model import RiskHyperparameters, RiskModel
from tune_risk.settings import EngineSettings

logger = logging.getLogger(__name__)

DEFAULT_ROUNDS = 100  # T when the engine has no budget


class EngineView(Protocol):
    """What the hooks read of the engine (``tune_risk.engine.core.Engine`` is one) and set on it
    (``hyperparameters``). A protocol, so that this layer does not import the engine that calls it."""

    settings: EngineSettings
    dim: int
    rounds: int
    records: list[ConfigRecord]
    hyperparameters: RiskHyperparameters | None

    def has_data(self, record: ConfigRecord) -> bool: ...

    def current_snapshot(self) -> ModelSnapshot | None: ...

    def snapshot_of(self, record: ConfigRecord) -> ModelSnapshot: ...

    def data_rows(self, records: list[ConfigRecord], snapshot: ModelSnapshot) -> list[tuple]: ...

    def build_model(self, rows: list[tuple], snapshot: ModelSnapshot) -> RiskModel: ...

    def x_tensor(self, records: list[ConfigRecord]) -> Tensor: ...


class EngineLengthscale:
    """The engine-side driver of one lengthscale strategy for ``G_f``."""

    def __init__(self, strategy: LengthscaleStrategy, beta: float, p: int) -> None:
        self.strategy, self.beta, self.p = strategy, beta, p
        self.played: dict[str, list[float]] = {}  # round -> lengthscale played in that round

    # ------------------------------------------------------------------ engine hooks
    @classmethod
    def create(cls, engine: EngineView) -> EngineLengthscale | None:
        """After the initial design: ``None`` for ``"mll"`` (the engine's own MAP fit), else a started strategy."""
        settings = engine.settings
        if settings.lengthscale == "mll":
            return None
        T = DEFAULT_ROUNDS if settings.budget is None else max(1, settings.budget // settings.k_min)
        beta = settings.kappa_acq ** 2
        strategy = make_strategy(settings.lengthscale, engine.dim, T=T, beta=beta, seed=settings.seed,
                                 **cls.oscbo_options(settings))
        p = 1 if settings.lengthscale == "oscbo-l1" else 2
        adapter = cls(strategy, beta, p)
        strategy.start(adapter.game_data(engine))
        adapter.apply(engine, strategy.theta)
        return adapter

    def before_round(self, engine: EngineView) -> None:
        """Play ``theta_{t-1}`` for round ``t = engine.rounds + 1``."""
        t = engine.rounds + 1
        theta = self.strategy.propose(t, self.game_data(engine))
        self.played[str(t)] = list(theta)
        self.apply(engine, theta)

    def after_round(self, engine: EngineView, record: ConfigRecord) -> None:
        """Feedback of the round of ``record`` once it stopped sampling (§3.10), under the round's
        snapshot, whose mean GP has the lengthscale played in that round."""
        if record.phase != "bo" or not engine.has_data(record) or str(record.round) not in self.played:
            return
        snapshot = engine.snapshot_of(record)
        records = [r for r in engine.records if engine.has_data(r)]
        others = [r for r in records if r.config_id != record.config_id]
        model = engine.build_model(engine.data_rows(records, snapshot), snapshot)
        previous = engine.build_model(engine.data_rows(others, snapshot), snapshot)
        gp = previous.mean_gp
        with torch.no_grad():
            mu, sd = gp.predict(engine.x_tensor([record]))
        mu_std, var_std = (float(mu[0]) - gp.y_mean) / gp.y_std, (float(sd[0]) / gp.y_std) ** 2
        row = records.index(record)
        y_t = float(model.mean_gp.targets[row])  # m_hat_t, frozen standardisation
        noise_t = float(model.mean_gp.noise[row])  # Sigma_hat_t in standardised units
        losses = round_losses(y_t, mu_std, var_std, noise_t, self.beta, self.p)
        self.strategy.observe(record.round, y_t, losses, record.config_id, self._data_from(model, records))

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def oscbo_options(settings: EngineSettings) -> dict[str, Any]:
        """``OSCBOConfig`` options of an OSCBO lengthscale (none for the other strategies)."""
        if settings.lengthscale not in ("oscbo", "oscbo-l1"):
            return {}
        return {"lambda_init": settings.oscbo_lambda_init, "omega": settings.oscbo_omega, "form": settings.oscbo_form}

    def game_data(self, engine: EngineView) -> GameData:
        """``(X, m_hat, Sigma_hat, config ids)`` of every configuration with data, standardised, under
        the engine's current model (warp and hyperparameters of the round about to start)."""
        records = [r for r in engine.records if engine.has_data(r)]
        snapshot = engine.current_snapshot()
        return self._data_from(engine.build_model(engine.data_rows(records, snapshot), snapshot), records)

    @staticmethod
    def _data_from(model: RiskModel, records: list) -> GameData:
        gp: ConditionedGP = model.mean_gp
        return GameData(gp.X.to(DTYPE), gp.targets.clone(), gp.noise.clamp_min(NOISE_FLOOR).clone(),
                        [r.config_id for r in records])

    @staticmethod
    def _mean_hyperparameters(hp: RiskHyperparameters, theta, dim: int):
        values = [float(v) for v in theta]
        lengthscale = tuple(values * dim if len(values) == 1 else values)
        return dataclasses.replace(hp.mean_gp, kernel="matern52", constant=0.0, lengthscale=lengthscale)

    def apply(self, engine: EngineView, theta) -> None:
        """Set ``G_f``'s lengthscale (Matérn-5/2, mean 0) to ``theta``, leaving ``G_var`` alone."""
        hp = engine.hyperparameters
        engine.hyperparameters = RiskHyperparameters(hp.variance_gp, self._mean_hyperparameters(hp, theta, engine.dim))

    @property
    def diagnostics(self) -> list[dict[str, Any]]:
        game = getattr(self.strategy, "game", None)
        return game.diagnostics if game is not None else self.strategy.diagnostics

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy.state_dict(), "beta": self.beta, "p": self.p,
                "played": {k: list(v) for k, v in self.played.items()}}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any] | None) -> EngineLengthscale | None:
        if state is None:
            return None
        adapter = cls(strategy_from_state(state["strategy"]), state["beta"], state["p"])
        adapter.played = {k: list(v) for k, v in state["played"].items()}
        return adapter
