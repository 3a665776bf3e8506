"""OSCBO's lengthscale game: FTPL primal, OMD dual and the play/recovery latch (docs/algorithms.md §3.3-3.7).

After each BO round the realised feedback ``(L^s_t, L^c_t)`` of the played lengthscale
``theta_{t-1}`` (eqs. 6, 7) updates

* the **primal** (FTPL, S4/S5):
  ``theta_t = argmin_Theta sum_{j in H} [L^s_j + lambda_{j-1} L^c_j](theta) - <eta_t, theta>`` by the projected-Adam oracle, the sums in closed form from one Cholesky
  factor, a fresh ``eta_t ~ N(0, 0.1^2 I)`` on ``theta`` each round (O-14, O-17);
* the **dual** (OMD with negative entropy, S7-S10): ``lambda_t = min(lambda_{t-1} exp(omega L^c_t), Lambda)``,
  from ``lambda_1`` (``lambda_init``; default ``beta/log(1 + sigma^-2)``, see ``nlml_balanced_lambda``);
* the violation ``V_{t+1} = V_t + L^c_t`` (Alg. 1 line 17), and at the top of a round a one-way
  latch into the **recovery** phase when ``V_t > (T - t) rho~ + M_rho~ - 1`` (O-8): the FTPL history
  restarts, ``Lambda = 1``, ``lambda = min(lambda_init, 1)`` and the primal uses the constraint-only
  utility ``lambda L^c`` (O-9; ``recovery_utility="alg2"`` keeps ``L^s + lambda L^c``).

The game knows nothing about the BO loop: the caller plays ``begin_round()``'s lengthscale, then
reports the round's losses, computed with the game's own exponent ``p`` (it enters both S5 and S7),
together with the data (rows identified by caller-chosen integer keys,
so that the engine can use configuration ids). All state is plain Python (``state_dict``), and the
perturbation of round ``t`` is a pure function of ``(seed, t)``, so a restored game continues exactly.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from tune_risk.oscbo.gp import NOISE, THETA_BOUNDS, as_theta, noise_vector
from tune_risk.oscbo.losses import RoundLosses, closed_form_sums
from tune_risk.oscbo.oracle import INITIAL_LENGTHSCALE, fit_lengthscale_mll, projected_adam

logger = logging.getLogger(__name__)

PLAY, RECOVERY = "play", "recovery"
FORMS = ("prefix", "literal")
RECOVERY_UTILITIES = ("constraint", "alg2")


@dataclass(frozen=True)
class OSCBOConfig:
    """Settings of one OSCBO game (Table S1 defaults; docs/algorithms.md §3.8).

    Attributes:
        p: calibration exponent, 2 (``"oscbo"``) or 1 (``"oscbo-l1"``).
        beta: ``beta`` of the calibration constraint (and of the UCB that plays it), O-12.
        T: number of BO rounds (``rho~`` and ``M``); ``T_for_rho`` overrides ``T`` in ``rho~`` only
            (Table S1 prints ``150^{-1/4}``, O-4).
        rho_hat, delta: feasibility lower bound and failure probability (``eta_f = delta/3``, O-7).
        theta_bounds: ``Theta`` on normalised inputs (O-14). ard: one lengthscale per dimension.
        ftpl_std: standard deviation of the Gaussian FTPL perturbation on ``theta``.
        adam_lr, adam_steps: the projected-Adam oracle. omega: OMD step size (O-11; Table S1's 0.001,
            the theory's ``sqrt(2 rho_hat / T)`` is 0.1 at ``T = 100``).
        lambda_init: the dual's start ``lambda_1 > 0`` (App. B.4 leaves it open, O-10); ``None`` (default):
            ``nlml_balanced_lambda(beta, noise of D_0)``, ``beta/log(1 + sigma^-2) = 0.433`` at Table S1's
            ``beta = 2, sigma^2 = 0.01``. grid_size: ``G`` of ``R^P_T`` in ``M`` (§3.6).
        form: ``"prefix"`` (``D_0`` only conditions, O-2) or ``"literal"`` (``D_0`` rows are rounds
            weighted ``lambda_init``).
        recovery_utility: ``"constraint"`` (O-9) or ``"alg2"``.
        clip_calibration: cap ``|L^c|`` at this value (O-16; ``None``: no clip).
        M_override: replaces ``M_rho~`` (test hook for the latch).
        kernel: ``"matern52"`` (the theory's kernel) or ``"rbf"``.
        seed: seeds the perturbations ``eta_t``.
    """

    p: int = 2
    beta: float = 2.0
    T: int = 100
    T_for_rho: float | None = None
    rho_hat: float = 0.5
    delta: float = 0.1
    theta_bounds: tuple[float, float] = THETA_BOUNDS
    ard: bool = False
    ftpl_std: float = 0.1
    adam_lr: float = 0.01
    adam_steps: int = 50
    omega: float = 0.001
    lambda_init: float | None = None
    grid_size: int = 100
    form: str = "prefix"
    recovery_utility: str = "constraint"
    clip_calibration: float | None = None
    M_override: float | None = None
    kernel: str = "matern52"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.p not in (1, 2):
            raise ValueError(f"p must be 1 or 2, got p={self.p!r}")
        for name in ("beta", "rho_hat", "omega"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {name}={getattr(self, name)!r}")
        if self.lambda_init is not None and not (self.lambda_init > 0 and math.isfinite(self.lambda_init)):
            raise ValueError(f"lambda_init must be a finite number > 0 (or None for beta/log(1 + sigma^-2)), "
                             f"got lambda_init={self.lambda_init!r}")
        if not (isinstance(self.T, int) and self.T >= 1):
            raise ValueError(f"T must be a positive integer, got T={self.T!r}")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must lie in (0, 1), got delta={self.delta!r}")
        lo, hi = self.theta_bounds
        if not 0 < lo < hi:
            raise ValueError(f"theta_bounds must satisfy 0 < lo < hi, got {self.theta_bounds!r}")
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got form={self.form!r}")
        if self.recovery_utility not in RECOVERY_UTILITIES:
            raise ValueError(f"recovery_utility must be one of {RECOVERY_UTILITIES}, got {self.recovery_utility!r}")

    @property
    def rho_tilde(self) -> float:
        """``rho~ = max(rho_hat/2, T^{-1/4})`` (Alg. 1 line 2)."""
        return max(self.rho_hat / 2.0, (self.T_for_rho or self.T) ** -0.25)

    def initial_lambda(self, noise: float | Tensor = NOISE) -> float:
        """``lambda_1``: ``lambda_init``, or ``nlml_balanced_lambda(beta, noise)`` when it is ``None``."""
        return self.lambda_init if self.lambda_init is not None else nlml_balanced_lambda(self.beta, noise)

    def threshold(self, dim_theta: int = 1, lambda_init: float | None = None) -> float:
        """``M_rho~`` of S3 (§3.6) for the start ``lambda_init`` (default ``initial_lambda()``), or ``M_override``."""
        if self.M_override is not None:
            return float(self.M_override)
        lam = self.initial_lambda() if lambda_init is None else lambda_init
        return threshold_M(self.T, self.rho_tilde, self.delta, self.omega, lam, self.grid_size ** dim_theta)


def nlml_balanced_lambda(beta: float, noise: float | Tensor = NOISE) -> float:
    r"""``lambda_1 = beta / log(1 + sigma^-2)``: the start at which S5 with ``p = 2`` is affine in the NLML.

    Our reading of App. B.4's "we initialize ``lambda_1 > 0``" (O-10). By S12/S13, with a constant
    ``lambda`` and ``p = 2`` the FTPL objective (S5, without ``eta``) over rows ``j`` is::

        sum_j log(sigma^2 + s^2_{j-1}(x_j)) / log(1 + sigma^-2) + (lambda/beta) sum_j z_j^2 + const

    and the negative log marginal likelihood in prequential form is
    ``(1/2) sum_j log(sigma^2 + s^2_{j-1}(x_j)) + (1/2) sum_j z_j^2 + const``. The two are affine in each
    other exactly when ``lambda = beta/log(1 + sigma^-2)`` (0.433 at ``beta = 2, sigma^2 = 0.01``): the
    "log-determinant and quadratic data-fit structure of GP marginal likelihood" of the paper's §8,
    behind "OSCBO closely tracks GP-UCB-MLL" (§7.2). The OMD step ``omega = 0.001`` moves ``lambda`` by
    about 0.1 % per unit of ``L^c``, so ``lambda_1`` fixes that balance for a 100-round run; ``lambda_1 = 1``
    weights the log-determinant 1/log(101) = 0.22 against the NLML's 0.5 (shorter lengthscales).

    With per-point noise ``sigma_j^2`` (ERAHBO's ``Sigma_hat``, §3.10) the weights ``1/log(1 + 1/sigma_j^2)``
    differ by row and no single ``lambda`` balances them all; we take their mean (``noise`` of ``D_0``).
    """
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got beta={beta!r}")
    if isinstance(noise, int | float):
        if not noise > 0:
            raise ValueError(f"noise must be > 0, got noise={noise!r}")
        return beta / math.log1p(1.0 / noise)
    values = noise_vector(noise, 1)
    if values.numel() == 0 or not bool((values > 0).all()):
        raise ValueError(f"noise must be positive variances, got {values.tolist()!r}")
    return beta * float((1.0 / torch.log1p(1.0 / values)).mean())


def threshold_M(T: int, rho_tilde: float, delta: float = 0.1, omega: float = 0.001,
                lambda_init: float = 1.0, grid_points: float = 100.0, dual_gradient: float = 1.0) -> float:
    r"""``M = (2/rho)sqrt(T) + (2 + 3/rho) E + (1 + 2/rho) R^P_T + R^D_T/rho`` (S3, §3.6).

    ``E = sqrt(8 T log(18 T^2/eta_f))`` at ``T`` with ``eta_f = delta/3`` (O-5); ``R^P_T`` is the
    FTPL/Hedge bound ``W_P sqrt(2 T log N_Theta)`` with ``W_P = 1 + 2/rho``; ``R^D_T`` the OMD bound
    ``max(lambda_0, D_psi(Lambda, lambda_0))/omega + omega T G_D^2 Lambda/2`` with ``Lambda = 1/rho``
    (our concrete choices, O-6).
    """
    eta_f = delta / 3.0
    E = math.sqrt(8.0 * T * math.log(18.0 * T**2 / eta_f))
    R_P = (1.0 + 2.0 / rho_tilde) * math.sqrt(2.0 * T * math.log(grid_points))
    Lam = 1.0 / rho_tilde
    bregman = Lam * math.log(Lam / lambda_init) - Lam + lambda_init
    R_D = max(lambda_init, bregman) / omega + omega * T * dual_gradient**2 * Lam / 2.0
    return 2.0 / rho_tilde * math.sqrt(T) + (2.0 + 3.0 / rho_tilde) * E + (1.0 + 2.0 / rho_tilde) * R_P + R_D / rho_tilde


def omd_step(lam: float, calibration: float, omega: float, upper: float) -> float:
    """Negative-entropy OMD (S9/S10): ``min(lambda exp(omega L^c), Lambda)``; the clip is the Bregman projection."""
    return min(lam * math.exp(omega * calibration), upper)


@dataclass
class GameData:
    """Rows the FTPL objective is evaluated on: inputs, targets (current standardisation, O-15),
    noise variances (same units) and one integer key per row, in the order revealed."""

    X: Tensor
    y: Tensor
    noise: Tensor | float
    keys: list[int] = field(default_factory=list)


class OSCBOGame:
    """One OSCBO primal-dual game over the lengthscale(s) of one GP (Alg. 1, 2)."""

    def __init__(self, config: OSCBOConfig, dim: int) -> None:
        self.config = config
        self.dim = int(dim)
        self.dim_theta = self.dim if config.ard else 1
        self.theta: tuple[float, ...] | None = None
        self.lambda_init: float | None = config.lambda_init  # resolved by start() when None
        self.lam = self.lambda_init
        self.Lambda = 1.0 / config.rho_tilde
        self.phase = PLAY
        self.V = 0.0
        self.V_plus_sum = 0.0
        self.rounds = 0  # rounds whose feedback has been observed
        self.switched_at: int | None = None
        self.history: list[list] = []  # [key, lambda_{j-1}] of each round in the current phase
        self.diagnostics: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ protocol
    @property
    def threshold(self) -> float:
        return self.config.threshold(self.dim_theta, self.lambda_init)

    def start(self, data: GameData, theta=None) -> tuple[float, ...]:
        """First play ``theta_0``: the MLL fit on ``D_0`` from ``theta = ln 2`` (O-3), or ``theta``.

        Also fixes ``lambda_1`` (``config.initial_lambda`` on the noise of ``D_0``) when ``lambda_init`` is ``None``.
        """
        if self.lambda_init is None:
            self.lambda_init = self.lam = self.config.initial_lambda(data.noise)
        if theta is None:
            cfg = self.config
            theta = fit_lengthscale_mll(
                data.X, data.y, data.noise, INITIAL_LENGTHSCALE, cfg.ard, cfg.theta_bounds, cfg.adam_lr,
                cfg.adam_steps, cfg.kernel,
            )
        self.theta = tuple(float(v) for v in as_theta(theta, self.dim_theta))
        if self.config.form == "literal":
            self.history = [[int(k), self.lambda_init] for k in data.keys]
        return self.theta

    def begin_round(self) -> tuple[float, ...]:
        """The lengthscale to play in round ``t = rounds + 1``, after the latch check (Alg. 1 l. 8-13)."""
        if self.theta is None:
            raise RuntimeError("OSCBOGame.start() must be called with D_0 before the first round")
        t = self.rounds + 1
        cfg = self.config
        if self.phase == PLAY and self.V > (cfg.T - t) * cfg.rho_tilde + self.threshold - 1.0:
            logger.info("OSCBO: V=%.4g exceeds the play budget at round %d; switching to recovery", self.V, t)
            self.phase, self.switched_at = RECOVERY, t
            self.history = []
            self.Lambda = 1.0
            self.lam = min(self.lambda_init, 1.0)
        return self.theta

    def observe(self, losses: RoundLosses, key: int, data: GameData) -> tuple[float, ...]:
        """RECALIBRATE (Alg. 2) with round ``t``'s feedback; returns ``theta_t``.

        ``losses`` are the realised losses of the played lengthscale with the game's exponent
        ``config.p`` (eq. 7): ``L^c`` drives both the dual step (S7) and ``V`` (Alg. 1 line 17), as the
        FTPL objective (S5) does. ``key`` identifies the round's row in ``data`` (which already contains it).
        """
        cfg = self.config
        t = self.rounds + 1
        theta_played, lam_played = self.theta, self.lam
        lc = losses.calibration
        self.V += lc  # Alg. 1 line 17, as played (never re-evaluated)
        self.V_plus_sum += max(lc, 0.0)
        self.history.append([int(key), lam_played])
        eta = self.perturbation(t)
        objective = self.objective(data, eta)
        result = projected_adam(objective, theta_played, cfg.theta_bounds, cfg.adam_lr, cfg.adam_steps)
        self.theta = result.theta
        self.lam = omd_step(self.lam, lc, cfg.omega, self.Lambda)
        self.rounds = t
        self._log(t, losses, theta_played, lam_played, result)
        return self.theta

    # ------------------------------------------------------------------ pieces
    def perturbation(self, t: int) -> Tensor:
        """``eta_t ~ N(0, ftpl_std^2 I_{d_theta})``, a pure function of ``(seed, t)``."""
        rng = np.random.default_rng(np.random.SeedSequence([self.config.seed, t]))
        return torch.as_tensor(rng.normal(0.0, self.config.ftpl_std, self.dim_theta), dtype=torch.float64)

    def objective(self, data: GameData, eta: Tensor | None = None):
        """``J_t(theta)`` over the current phase's history (§3.3), as a function of ``theta``."""
        cfg = self.config
        row_of = {int(k): i for i, k in enumerate(data.keys)}
        known = [(row_of[k], lam) for k, lam in self.history if k in row_of]
        if len(known) < len(self.history):
            logger.warning("OSCBO: %d history rows are missing from the data", len(self.history) - len(known))
        rows = [r for r, _ in known]
        lambdas = [lam for _, lam in known]
        with_sharpness = self.phase == PLAY or cfg.recovery_utility == "alg2"
        eta = torch.zeros(self.dim_theta, dtype=torch.float64) if eta is None else eta

        def J(theta: Tensor) -> Tensor:
            sharp, calib = closed_form_sums(theta, data.X, data.y, data.noise, rows, lambdas, cfg.beta, cfg.p, cfg.kernel)
            value = calib + sharp if with_sharpness else calib
            return value - (eta * as_theta(theta, self.dim_theta)).sum()

        return J

    def _log(self, t: int, losses: RoundLosses, theta: tuple, lam: float, result) -> None:
        previous = self.diagnostics[-1] if self.diagnostics else None
        covered = losses.calibration <= 0.0
        n_covered = (previous["n_covered"] if previous else 0) + int(covered)
        width_sum = (previous["width_sum"] if previous else 0.0) + losses.width_obs
        target = 1.0 - self.config.delta  # the paper's calibration level (eq. 3: p_hat_T ~ 1 - delta)
        self.diagnostics.append({
            "t": t, "phase": self.phase, "theta": list(theta), "lambda": lam,
            "sharpness": losses.sharpness, "calibration": losses.calibration, "z": losses.z,
            "covered": covered, "n_covered": n_covered, "coverage": n_covered / t,
            "coverage_gap": abs(n_covered / t - target),
            "width_obs": losses.width_obs, "width_latent": losses.width_latent,
            "width_sum": width_sum, "mean_width": width_sum / t,
            "V": self.V, "V_plus": max(self.V, 0.0), "V_plus_sum": self.V_plus_sum,
            "theta_next": list(self.theta), "lambda_next": self.lam,
            "objective_start": result.start_value, "objective_best": result.value,
        })

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """Exact plain-container state."""
        return {
            "config": dataclasses.asdict(self.config), "dim": self.dim,
            "theta": None if self.theta is None else list(self.theta), "lambda_init": self.lambda_init,
            "lam": self.lam, "Lambda": self.Lambda,
            "phase": self.phase, "V": self.V, "V_plus_sum": self.V_plus_sum, "rounds": self.rounds,
            "switched_at": self.switched_at, "history": [list(h) for h in self.history],
            "diagnostics": [dict(d) for d in self.diagnostics],
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> OSCBOGame:
        config = dict(state["config"])
        config["theta_bounds"] = tuple(config["theta_bounds"])
        game = cls(OSCBOConfig(**config), state["dim"])
        game.theta = None if state["theta"] is None else tuple(state["theta"])
        game.lambda_init = state.get("lambda_init", game.config.lambda_init)  # states before lambda_init=None
        for name in ("lam", "Lambda", "phase", "V", "V_plus_sum", "rounds", "switched_at"):
            setattr(game, name, state[name])
        game.history = [list(h) for h in state["history"]]
        game.diagnostics = [dict(d) for d in state["diagnostics"]]
        return game
