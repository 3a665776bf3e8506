"""Lengthscale strategies by name: MLL, OSCBO (p = 2, 1), A-GP-UCB and LB-GP-UCB (docs/algorithms.md §3, §4.2-4.5).

Every strategy chooses the lengthscale of a zero-mean, unit-amplitude GP with fixed noise, one BO
round at a time, through the same protocol::

    theta_0 = strategy.start(d0)                 # D_0 only (MLL fit from ln 2, O-3)
    for t = 1, 2, ...:
        theta = strategy.propose(t, data)        # D_{t-1}, current standardisation
        ... play the GP with theta, observe y_t at x_t ...
        strategy.observe(t, y_t, losses, key, data)   # losses: RoundLosses of the played theta

``data`` is a ``GameData`` (inputs, standardised targets, noise variances and one integer key per
row) so that the same strategies serve the plain GP-UCB loop (keys = row indices, noise 0.01) and
the ERAHBO engine (keys = configuration ids, noise = eq. 19's ``Sigma_hat``, §3.10). State is plain
Python (``state_dict``) so an engine that holds a strategy restores exactly.
"""

from __future__ import annotations

import math
from typing import Any

from tune_risk.oscbo.game import GameData, OSCBOConfig, OSCBOGame
from tune_risk.oscbo.losses import RoundLosses
from tune_risk.oscbo.oracle import INITIAL_LENGTHSCALE, fit_lengthscale_mll

STRATEGIES = ("mll", "oscbo", "oscbo-l1", "a-gp-ucb", "lb-gp-ucb")
THETA_MIN_SCHEDULE = 1e-4  # theta_min of A-GP-UCB and LB-GP-UCB (Table S1)


class LengthscaleStrategy:
    """Base class: holds the current lengthscale and the per-round diagnostics."""

    name = "base"

    def __init__(self, dim: int, ard: bool = False, kernel: str = "matern52") -> None:
        self.dim, self.ard, self.kernel = int(dim), bool(ard), kernel
        self.theta: tuple[float, ...] | None = None
        self.theta0: tuple[float, ...] | None = None
        self.diagnostics: list[dict[str, Any]] = []

    def _mll(self, data: GameData, init) -> tuple[float, ...]:
        return fit_lengthscale_mll(data.X, data.y, data.noise, init, self.ard, kernel=self.kernel)

    def start(self, data: GameData) -> tuple[float, ...]:
        """``theta_0``: MLL on ``D_0`` from ``theta = ln 2`` (O-3)."""
        self.theta = self.theta0 = self._mll(data, INITIAL_LENGTHSCALE)
        return self.theta

    def propose(self, t: int, data: GameData) -> tuple[float, ...]:
        """The lengthscale played in round ``t`` (``data`` is ``D_{t-1}``)."""
        raise NotImplementedError

    def observe(self, t: int, y_t: float, losses: RoundLosses, key: int, data: GameData) -> None:
        """Feedback of round ``t``: standardised ``y_t``, the played GP's losses, ``data`` = ``D_t``."""
        self.diagnostics.append(_diagnostic(t, self.theta, losses))

    # persistence: every attribute is a plain container
    def state_dict(self) -> dict[str, Any]:
        return {"name": self.name, **{k: _plain(v) for k, v in self.__dict__.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            if key != "name":
                setattr(self, key, tuple(value) if key in ("theta", "theta0") and value is not None else value)


class MLLStrategy(LengthscaleStrategy):
    """GP-UCB-MLL (§4.2): refit by MLL (projected Adam, lr 0.01, 50 steps, no prior), warm-started."""

    name = "mll"

    def __init__(self, dim: int, ard: bool = False, kernel: str = "matern52") -> None:
        super().__init__(dim, ard, kernel)
        self.fitted_rows = 0

    def start(self, data: GameData) -> tuple[float, ...]:
        self.fitted_rows = data.X.shape[0]
        return super().start(data)

    def propose(self, t: int, data: GameData) -> tuple[float, ...]:
        if data.X.shape[0] != self.fitted_rows:  # round 1 plays the D_0 fit itself
            self.theta = self._mll(data, self.theta)
            self.fitted_rows = data.X.shape[0]
        return self.theta


class OSCBOStrategy(LengthscaleStrategy):
    """OSCBO (§3): the lengthscale of the sharpness/calibration game (``p = 2`` or ``p = 1``)."""

    name = "oscbo"

    def __init__(self, dim: int, config: OSCBOConfig | None = None) -> None:
        config = config or OSCBOConfig()
        super().__init__(dim, config.ard, config.kernel)
        self.game = OSCBOGame(config, dim)
        self.name = "oscbo" if config.p == 2 else "oscbo-l1"

    def start(self, data: GameData) -> tuple[float, ...]:
        self.theta = self.theta0 = self.game.start(data)
        return self.theta

    def propose(self, t: int, data: GameData) -> tuple[float, ...]:
        self.theta = self.game.begin_round()
        return self.theta

    def observe(self, t: int, y_t: float, losses: RoundLosses, key: int, data: GameData) -> None:
        self.theta = self.game.observe(losses, key, data)

    @property
    def diagnostics_rows(self) -> list[dict[str, Any]]:
        return self.game.diagnostics

    def state_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dim": self.dim, "theta": _plain(self.theta), "theta0": _plain(self.theta0),
                "game": self.game.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.game = OSCBOGame.from_state_dict(state["game"])
        self.theta = None if state["theta"] is None else tuple(state["theta"])
        self.theta0 = None if state["theta0"] is None else tuple(state["theta0"])


def schedule_g(t: int, t0: int = 5) -> float:
    """``g_t = 1`` for ``t <= t0``, else ``sqrt(t)`` (Table S1, O-24)."""
    return 1.0 if t <= t0 else math.sqrt(t)


class AGPUCBStrategy(LengthscaleStrategy):
    """A-GP-UCB (§4.4): ``theta_t = max(theta_0/g_t, theta_min)`` with ``theta_0`` from ``D_0`` only."""

    name = "a-gp-ucb"

    def __init__(self, dim: int, ard: bool = False, kernel: str = "matern52", t0: int = 5,
                 theta_min: float = THETA_MIN_SCHEDULE) -> None:
        super().__init__(dim, ard, kernel)
        self.t0, self.theta_min = t0, theta_min

    def propose(self, t: int, data: GameData) -> tuple[float, ...]:
        g = schedule_g(t, self.t0)
        self.theta = tuple(max(v / g, self.theta_min) for v in self.theta0)
        return self.theta


class LBGPUCBStrategy(LengthscaleStrategy):
    """LB-GP-UCB (§4.5): a growing candidate grid ``q(i) = theta_0 e^{-i/r}`` balanced by a regret
    proxy, with elimination by confidence bounds on the rewards collected under each candidate.

    ``grid_ratio_dim``: ``r = d`` (Table S1) or ``d + 5`` (the LB code for Matérn-5/2, O-23).
    """

    name = "lb-gp-ucb"

    def __init__(self, dim: int, ard: bool = False, kernel: str = "matern52", t0: int = 5,
                 theta_min: float = THETA_MIN_SCHEDULE, B: float = 1.0, C: float = 1.0, delta: float = 0.1,
                 noise: float = 0.01, grid_ratio_dim: str = "d") -> None:
        super().__init__(dim, ard, kernel)
        self.t0, self.theta_min, self.B, self.C, self.delta, self.noise = t0, theta_min, B, C, delta, noise
        self.grid_ratio_dim = grid_ratio_dim
        self.n_candidates = 1  # q(0), ..., q(n_candidates - 1) have been added
        self.active = [0]
        self.memory: dict[str, list[list[float]]] = {"0": []}  # index -> [[y_tilde, sqrt(beta) sigma], ...]
        self.played: int | None = None

    def candidate(self, i: int) -> float:
        """``q(i) = theta_0 e^{-i/r}`` (isotropic, the first entry of ``theta_0``)."""
        r = self.dim if self.grid_ratio_dim == "d" else self.dim + 5
        return self.theta0[0] * math.exp(-i / r)

    def regret_proxy(self, theta: float, n: int) -> float:
        """``R^theta(N) = C sqrt(N theta^-d log^{d+1} N) (sqrt(theta^-d log^{d+1} N) + B)`` (LB code, RBF form)."""
        if n <= 1:
            return 0.0
        d = self.dim
        inner = math.exp(-d * math.log(theta) + (d + 1) * math.log(math.log(n)))
        return self.C * math.sqrt(n * inner) * (math.sqrt(inner) + self.B)

    def propose(self, t: int, data: GameData) -> tuple[float, ...]:
        floor = self.theta0[0] / schedule_g(t, self.t0)
        while self.candidate(self.n_candidates) > floor and self.candidate(self.n_candidates) >= self.theta_min:
            self.active.append(self.n_candidates)
            self.memory[str(self.n_candidates)] = []
            self.n_candidates += 1
        self._eliminate(t)
        scores = [self.regret_proxy(self.candidate(i), len(self.memory[str(i)]) + 1) for i in self.active]
        self.played = self.active[min(range(len(scores)), key=scores.__getitem__)]
        self.theta = (self.candidate(self.played),) * (self.dim if self.ard else 1)
        return self.theta

    def _eliminate(self, t: int) -> None:
        counts = [len(self.memory[str(i)]) for i in self.active]
        if len(self.active) < 2 or min(counts) < 1:
            return
        xi = 2.0 * self.noise * math.log(len(self.active) * math.pi**2 * t**2 / (6.0 * self.delta))
        lower, upper = {}, {}
        for i in self.active:
            rows = self.memory[str(i)]
            n = len(rows)
            mean = sum(r[0] for r in rows) / n
            lower[i] = mean - math.sqrt(xi / n)
            upper[i] = mean + sum(r[1] for r in rows) / n + math.sqrt(xi / n)
        best_lower = max(lower.values())
        self.active = [i for i in self.active if upper[i] >= best_lower]

    def observe(self, t: int, y_t: float, losses: RoundLosses, key: int, data: GameData) -> None:
        self.memory[str(self.played)].append([float(y_t), losses.width_latent / 2.0])
        super().observe(t, y_t, losses, key, data)


def make_strategy(name: str, dim: int, *, T: int = 100, beta: float = 2.0, seed: int = 0, ard: bool = False,
                  **oscbo_options: Any) -> LengthscaleStrategy:
    """The strategy ``name`` (one of ``STRATEGIES``) for a ``dim``-dimensional input space."""
    if name == "mll":
        return MLLStrategy(dim, ard)
    if name in ("oscbo", "oscbo-l1"):
        config = OSCBOConfig(p=2 if name == "oscbo" else 1, beta=beta, T=T, seed=seed, ard=ard, **oscbo_options)
        return OSCBOStrategy(dim, config)
    if name == "a-gp-ucb":
        return AGPUCBStrategy(dim, ard)
    if name == "lb-gp-ucb":
        return LBGPUCBStrategy(dim, ard)
    raise ValueError(f"unknown lengthscale strategy {name!r}; valid names are {', '.join(map(repr, STRATEGIES))}")


def strategy_from_state(state: dict[str, Any]) -> LengthscaleStrategy:
    """Rebuild a strategy from ``state_dict()``."""
    name = state["name"]
    cls = {"mll": MLLStrategy, "a-gp-ucb": AGPUCBStrategy, "lb-gp-ucb": LBGPUCBStrategy}.get(name)
    if cls is None:
        strategy = OSCBOStrategy.__new__(OSCBOStrategy)
        strategy.diagnostics = []
        strategy.dim, strategy.ard, strategy.kernel, strategy.name = state["dim"], False, "matern52", name
        strategy.load_state_dict(state)
        strategy.ard, strategy.kernel = strategy.game.config.ard, strategy.game.config.kernel
        return strategy
    strategy = cls(state["dim"])
    strategy.load_state_dict(state)
    return strategy


def _diagnostic(t: int, theta, losses: RoundLosses) -> dict[str, Any]:
    return {"t": t, "theta": list(theta), "sharpness": losses.sharpness, "calibration": losses.calibration,
            "z": losses.z, "width_obs": losses.width_obs, "width_latent": losses.width_latent}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
