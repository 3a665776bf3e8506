"""Engine settings: every knob of ERAHBO, RAHBO and risk-neutral GP-UCB in one validated record.

ERAHBO (Che et al., Sec. 4-5), RAHBO(k) and GP-UCB are *settings of one engine* (docs/algorithms.md §1.13):

=============  =========================  ===============================================
method         replicates per config      objective
=============  =========================  ===============================================
``erahbo``     adaptive, ``k_min..k_max``  ``MV(x) = f(x) - alpha * rho^2(x)``
``rahbo``      fixed ``k = k_max``         same MV objective, no early stopping
``gp-ucb``     fixed ``k = k_max``         ``alpha = 0`` (risk neutral)
=============  =========================  ===============================================

Only ERAHBO has a certificate (eq. 12): its rounds stop as ``certified``, ``k_max`` or ``budget``;
RAHBO's and GP-UCB's rounds never compute ``B_t`` and stop at ``k_max`` (or ``budget``).

Every default carries the tag of docs/algorithms.md §1.14 (PAPER or CHOICE); every flag that resolves an
ambiguity of the papers names it (A-n).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from tune_risk.schedules import validate_schedule

METHODS = ("erahbo", "rahbo", "gp-ucb")
LAUNCH_POLICIES = ("doubling", "window", "all")
MEAN_NOISE = ("eq19", "plugin", "rahbo_code")
VAR_NOISE = ("learned", "theory", "k_aware")
VAR_POSTERIORS = ("gp", "nonnegative")
RECOMMEND_RULES = ("lcb", "posterior", "evidence")
# RiskAwareSearch's rule for method="erahbo" (the replay's tune-risk): the paper's "lcb" deploys configurations
# that never learn where few learn; EngineSettings keeps "lcb" so that method "erahbo" replays the paper.
SEARCHER_RECOMMEND = "evidence"
SEARCHER_INTENSIFY = 0.1  # RiskAwareSearch's default: the share of the budget kept for incumbent intensification
KERNELS = ("rbf", "matern52")
REFIT = ("once", "every_round")
STANDARDIZATION = ("frozen", "per_build")
BETA_CONVENTIONS = ("sqrt", "multiplier")
LATE_RESULTS = ("discard", "append")
BUDGET_UNITS = ("samples", "runs")
WARP_MODES = ("online", "none")
WARP_REFITS = ("outside_support", "never")
LENGTHSCALES = ("mll", "oscbo", "oscbo-l1", "a-gp-ucb", "lb-gp-ucb")
OSCBO_FORMS = ("prefix", "literal")
OSCBO_OMEGA = 0.001  # OMD step size of Table S1
FIELD_CHOICES: dict[str, tuple[str, ...]] = {
    "budget_unit": BUDGET_UNITS, "warp": WARP_MODES, "warp_refit": WARP_REFITS, "mean_noise": MEAN_NOISE,
    "var_noise": VAR_NOISE, "var_posterior": VAR_POSTERIORS, "recommend": RECOMMEND_RULES, "kernel": KERNELS, "refit": REFIT, "standardization": STANDARDIZATION,
    "beta_convention": BETA_CONVENTIONS, "launch_policy": LAUNCH_POLICIES, "late_results": LATE_RESULTS,
    "lengthscale": LENGTHSCALES, "oscbo_form": OSCBO_FORMS,
}
"""Valid values of the string fields of :class:`EngineSettings` (besides ``method`` and the schedule),
shared by the validation and the ``tune-risk replay`` flags."""


def searcher_preset(method: str, k_min: int, k_init: int | None) -> dict[str, Any]:
    """What ``RiskAwareSearch`` changes from the paper's preset of ``method`` (``EngineSettings.for_method``).

    The one place for it: the searcher and the replay's ``tune-risk`` (the searcher's defaults, replayed)
    both read it. Under Tune every trial is a run of the budget (``budget_unit="runs"``: the initial design,
    cancelled and failed runs are charged); ERAHBO's initial design gets ``k_init = k_min`` replicates unless
    ``k_init`` is given (the paper's 20 would spend most of a small budget on 5 configurations), and it
    recommends on the evidence of the seeds (``SEARCHER_RECOMMEND``, A-21). Incumbent intensification
    (``SEARCHER_INTENSIFY`` of the budget) is resolved by the caller, which knows the budget.

    Example:
        >>> searcher_preset("erahbo", k_min=2, k_init=None)
        {'budget_unit': 'runs', 'recommend': 'evidence', 'k_init': 2, 'k_min': 2}
        >>> searcher_preset("rahbo", k_min=2, k_init=None)
        {'budget_unit': 'runs'}
    """
    if method != "erahbo":
        return {"budget_unit": "runs"}
    return {"budget_unit": "runs", "recommend": SEARCHER_RECOMMEND, "k_init": k_min if k_init is None else k_init,
            "k_min": k_min}


@dataclass(frozen=True)
class EngineSettings:
    """Validated settings of the ask/tell engine.

    Attributes (defaults are the ERAHBO paper's, docs/algorithms.md §1.14):
        method: ``"erahbo"``, ``"rahbo"`` or ``"gp-ucb"`` (see module docstring); only
            ``"erahbo"`` certifies configurations (``B_t``, eq. 12).
        alpha: risk aversion ``alpha >= 0`` of ``MV = f - alpha * rho^2`` (ERAHBO eq. 5).
        k_min, k_max: replicate bounds, ``2 <= k_min <= k_max`` (a variance needs two samples).
        k_init: replicates per initial-design configuration, ``>= k_min`` (a configuration enters
            the GPs with ``k >= k_min`` returns); ``None`` means ``k_max`` (A-8).
        n_initial: configurations of the scrambled-Sobol initial design.
        beta: acquisition ``beta``; ``kappa_acq = sqrt(beta)`` (A-1).
        beta_stop: ``beta_stop,max`` of the stop rule (ERAHBO eq. 12, App. C.5).
        beta_stop_schedule / schedule_param: ``constant``, ``exponential`` (gamma) or ``sigmoid`` (s);
            the last two are functions of ``tau = N_used / N_max`` and need a ``budget`` (the
            ``Engine`` refuses them without one).
        budget: replicate-run budget ``N_max``; ``None`` means unbounded (the caller stops asking).
        budget_unit: ``"samples"`` charges incorporated BO replicates (the paper's ``N_used``, A-16);
            ``"runs"`` charges every launched run, initial design, cancelled and failed ones included
            (Ray Tune's ``num_samples``).
        charge_initial: with ``budget_unit="samples"``, also charge the initial design.
        rho_bar_sq: variance bound used to clip ``UCB_var`` in eq. 19; ``None`` takes the bound
            implied by the warp (Popoviciu, A-5): ``warp_bound**2``, 0.25 by default. Required
            with ``warp="none"`` and no fitted warp given to the engine.
        warp: ``"online"`` fits the Vizier warper on the initial design (§1.2); ``"none"`` uses
            returns as given. Ignored when a fitted warp (e.g. pooled over an offline table) is
            given to the ``Engine``: that warp is used as is and never re-fitted.
        warp_refit: ``"outside_support"`` re-fits the online warp on all data at the start of a
            round when returns have left the range it was fitted on (a round boundary only; every
            decision of a round is taken under the warp current at its start), and re-fits the
            hyperparameters with it; ``"never"`` keeps the warp fitted on the initial design for
            the whole run.
        warp_bound: the online warp maps the range of its fitting sample onto [-0.5, 0.5] and,
            until the next re-fit, extends linearly beyond it up to ``[-warp_bound, warp_bound]``.
            0.5 (default) clips at the fitted range, as Vizier's warper does; since the warp is
            re-fitted at the next round start, the clip acts only inside a round, and the
            Popoviciu bound stays ``rho_bar^2 = 0.25`` (A-5). A replay study found no difference
            from 1.0 (README, "Online output warp").
        mean_noise, var_noise: A-4 and A-6 resolutions for the two GPs.
        var_posterior: ``"gp"`` (the paper: G_var's posterior as it is) or ``"nonnegative"`` (its mean
            projected onto [0, inf) wherever it is used: eq. 19's noise, LCB/UCB^MV; A-20).
        recommend: the rule of ``Engine.recommend()``, the configuration to deploy: ``"lcb"`` (CODE-RAHBO's
            ``argmax LCB^MV`` over every configuration with data, §1.10) or ``"posterior"`` (the posterior MV
            ``mu_f - alpha max(mu_var, 0)`` among the configurations with at least ``ceil(k_max / 2)`` seeds, or
            the most seeds any has; A-21).
        kernel: ``"rbf"`` (BoTorch default with dimension-scaled prior, A-14) or ``"matern52"``.
        refit: hyperparameters fitted ``"once"`` on the initial design, or ``"every_round"`` (A-7).
        standardization: ``"frozen"`` output-standardisation constants (fitted with the
            hyperparameters, §1.4.4 recommendation) or ``"per_build"`` (BoTorch ``Standardize``).
        beta_convention: ``"sqrt"`` (kappa = sqrt(beta)) or ``"multiplier"`` (kappa = beta).
        launch_policy / window: doubling waves (§2.3), a sliding window of ``window`` replicates
            in flight, or all ``k_max`` at once.
        max_active_configs: configurations sampled at the same time; 1 is the decision-equivalent
            mode (§2.6), more is the asynchronous mode (§2.5).
        late_results: ``"discard"`` cancels in-flight replicates of a stopped configuration;
            ``"append"`` lets them finish and appends them in replicate order (§2.4).
        max_failures_per_config: failed replicate runs (errors, NaN/inf) tolerated per
            configuration; each is retried with a fresh seed, one more marks it failed.
        common_random_numbers: replicate ``i`` of every configuration uses seed ``i``.
        lengthscale: the mean GP's lengthscale: ``"mll"`` (the MAP fit above) or a strategy of
            ``tune_risk.lengthscale`` (``"oscbo"``, ``"oscbo-l1"``, ``"a-gp-ucb"``, ``"lb-gp-ucb"``),
            which makes ``G_f`` Matérn-5/2 with mean 0 (OSCBO x ERAHBO, docs/algorithms.md §3.10).
        oscbo_lambda_init, oscbo_omega, oscbo_form: the OSCBO game's dual start ``lambda_1`` (``None``:
            ``beta/log(1 + sigma^-2)`` averaged over the initial design's noise ``Sigma_hat``, at which the
            p = 2 objective S5 is affine in the marginal likelihood; see ``tune_risk.oscbo.nlml_balanced_lambda``),
            its OMD step size (Table S1's 0.001) and the role of the initial design in S5 (``"prefix"``:
            conditioning only, O-2; ``"literal"``: rounds weighted ``lambda_1``). Only with
            ``lengthscale="oscbo"`` or ``"oscbo-l1"``.
        intensify: replicate runs reserved at the end of the budget for incumbent intensification:
            once no BO round can start, they add replicates to the three configurations with the
            highest ``LCB^MV`` (``Engine._intensify``); 0 (the default, chosen from
            ``experiments/studies/intensification.py``) turns it off. Needs a ``budget``.
        num_restarts / raw_samples: ``optimize_acqf`` settings on the continuous cube.
        seed: fixes every random choice (Sobol design, acquisition restarts, replicate seeds).
        torch_threads: torch threads for the engine's GP algebra (0: torch's own setting); see
            ``tune_risk.engine.threads`` for why 1 is the default.

    Example:
        >>> from tune_risk import EngineSettings
        >>> settings = EngineSettings.for_method("erahbo", budget=300)
        >>> settings.method, settings.alpha, settings.k_min, settings.k_max, settings.budget, settings.budget_unit
        ('erahbo', 1.0, 2, 20, 300, 'samples')
        >>> round(settings.kappa_acq, 4)  # sqrt(beta), beta = 2.5
        1.5811
        >>> rahbo = EngineSettings.for_method("rahbo", k=10)
        >>> rahbo.k_min, rahbo.k_max, rahbo.has_certificate
        (10, 10, False)
        >>> EngineSettings(k_min=1)
        Traceback (most recent call last):
            ...
        ValueError: k_min must be >= 2, got k_min=1 (a sample variance needs two replicates)
    """

    method: str = "erahbo"
    alpha: float = 1.0
    k_min: int = 2
    k_max: int = 20
    k_init: int | None = None
    n_initial: int = 5
    beta: float = 2.5
    beta_stop: float = 1.0
    beta_stop_schedule: str = "constant"
    schedule_param: float | None = None
    budget: int | None = None
    budget_unit: str = "samples"
    charge_initial: bool = False
    rho_bar_sq: float | None = None
    warp: str = "online"
    warp_refit: str = "outside_support"
    warp_bound: float = 0.5
    mean_noise: str = "eq19"
    var_noise: str = "learned"
    var_posterior: str = "gp"
    recommend: str = "lcb"
    kernel: str = "rbf"
    refit: str = "once"
    standardization: str = "frozen"
    beta_convention: str = "sqrt"
    launch_policy: str = "doubling"
    window: int = 2
    max_active_configs: int = 1
    late_results: str = "discard"
    max_failures_per_config: int = 2
    common_random_numbers: bool = False
    lengthscale: str = "mll"
    intensify: int = 0
    oscbo_lambda_init: float | None = None
    oscbo_omega: float = OSCBO_OMEGA
    oscbo_form: str = "prefix"
    num_restarts: int = 4
    raw_samples: int = 1000
    seed: int = 0
    torch_threads: int = 1

    def __post_init__(self) -> None:
        _check_choice("method", self.method, METHODS)
        _check_number("alpha", self.alpha, minimum=0.0)
        _check_int("k_min", self.k_min, minimum=2, why="a sample variance needs two replicates")
        _check_int("k_max", self.k_max, minimum=self.k_min, why=f"k_max must be >= k_min={self.k_min}")
        if self.k_init is not None:
            _check_int("k_init", self.k_init, minimum=2, why="a sample variance needs two replicates")
            _check_int("k_init", self.k_init, minimum=self.k_min, why=(
                f"k_min={self.k_min}: a configuration enters the GPs only with k >= k_min returns, so "
                "an initial design with fewer would never be used"))
        _check_int("n_initial", self.n_initial, minimum=2, why="the GPs need two configurations")
        _check_number("beta", self.beta, minimum=0.0, strict=True)
        _check_number("beta_stop", self.beta_stop, minimum=0.0)
        validate_schedule(self.beta_stop_schedule, self.schedule_param)
        if self.budget is not None:
            _check_int("budget", self.budget, minimum=1)
        if self.rho_bar_sq is not None:
            _check_number("rho_bar_sq", self.rho_bar_sq, minimum=0.0, strict=True)
        _check_number("warp_bound", self.warp_bound, minimum=0.5)
        for name, valid in FIELD_CHOICES.items():
            _check_choice(name, getattr(self, name), valid)
        self._check_oscbo()
        _check_int("window", self.window, minimum=1)
        _check_int("max_active_configs", self.max_active_configs, minimum=1)
        _check_int("max_failures_per_config", self.max_failures_per_config, minimum=0)
        _check_int("intensify", self.intensify, minimum=0)
        if self.intensify and self.budget is None:
            raise ValueError(f"intensify={self.intensify} reserves runs at the end of the budget; it needs a budget")
        if self.intensify and self.budget is not None and self.intensify >= self.budget:
            raise ValueError(f"intensify={self.intensify} must be smaller than budget={self.budget}")
        _check_int("num_restarts", self.num_restarts, minimum=1)
        _check_int("raw_samples", self.raw_samples, minimum=1)
        _check_int("seed", self.seed, minimum=0)
        _check_int("torch_threads", self.torch_threads, minimum=0)
        if self.method == "gp-ucb" and self.alpha != 0.0:
            raise ValueError(f"method='gp-ucb' is risk neutral and needs alpha=0, got alpha={self.alpha!r}")
        if self.method in ("rahbo", "gp-ucb") and self.k_min != self.k_max:
            raise ValueError(
                f"method={self.method!r} uses a fixed number of replicates: k_min must equal k_max, "
                f"got k_min={self.k_min}, k_max={self.k_max} (use EngineSettings.for_method)"
            )
        if self.budget is not None and self.budget_unit == "runs":
            initial_runs = self.n_initial * self.replicates_initial
            if self.budget < initial_runs:
                raise ValueError(
                    f"budget={self.budget} runs is smaller than the initial design "
                    f"(n_initial={self.n_initial} x k_init={self.replicates_initial} = {initial_runs})"
                )

    def _check_oscbo(self) -> None:
        """The OSCBO game's options: valid values, and given only where an OSCBO game runs."""
        if self.oscbo_lambda_init is not None:
            _check_number("oscbo_lambda_init", self.oscbo_lambda_init, minimum=0.0, strict=True)
        _check_number("oscbo_omega", self.oscbo_omega, minimum=0.0, strict=True)
        changed = [name for name, default in (("oscbo_lambda_init", None), ("oscbo_omega", OSCBO_OMEGA),
                                              ("oscbo_form", "prefix")) if getattr(self, name) != default]
        if changed and self.lengthscale not in ("oscbo", "oscbo-l1"):
            raise ValueError(f"{', '.join(changed)} set the OSCBO game, which runs only with lengthscale='oscbo' "
                             f"or 'oscbo-l1', got lengthscale={self.lengthscale!r}")

    @classmethod
    def for_method(cls, method: str, **overrides: Any) -> EngineSettings:
        """Settings of ``method`` with the paper's defaults (§1.13), then ``overrides``.

        ``rahbo`` and ``gp-ucb`` use a fixed ``k``: ``k_min = k_max = k`` where ``k`` is the
        override ``k`` if given, else ``k_max`` (default 20). ``gp-ucb`` forces ``alpha = 0``.
        """
        _check_choice("method", method, METHODS)
        k = overrides.pop("k", None)
        if method in ("rahbo", "gp-ucb"):
            k = k if k is not None else overrides.get("k_max", 20)
            overrides["k_min"] = overrides["k_max"] = k
        elif k is not None:
            raise ValueError(f"'k' fixes the replicates of rahbo/gp-ucb; for erahbo give k_min/k_max, got k={k!r}")
        if method == "gp-ucb":
            overrides["alpha"] = 0.0
        return cls(method=method, **overrides)

    @property
    def replicates_initial(self) -> int:
        """``k_init``: replicates of each initial-design configuration (A-8)."""
        return self.k_init if self.k_init is not None else self.k_max

    def kappa(self, beta: float) -> float:
        """Confidence multiplier for a ``beta`` (A-1): ``sqrt(beta)``, or ``beta`` itself."""
        return math.sqrt(beta) if self.beta_convention == "sqrt" else beta

    @property
    def has_certificate(self) -> bool:
        """``True`` for ERAHBO, whose rounds compute ``B_t`` (eq. 10) and may stop certified
        (eq. 12); RAHBO and GP-UCB sample a fixed ``k`` and have no certificate."""
        return self.method == "erahbo"

    @property
    def kappa_acq(self) -> float:
        """``kappa_acq``: the acquisition's multiplier, used for both GPs (A-2)."""
        return self.kappa(self.beta)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, for ``state_dict``."""
        return dataclasses.asdict(self)


def _check_choice(name: str, value: Any, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(f"unknown {name}={value!r}; valid values are {', '.join(map(repr, valid))}")


def _check_number(name: str, value: Any, *, minimum: float, strict: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if value < minimum or (strict and value == minimum):
        relation = ">" if strict else ">="
        raise ValueError(f"{name} must be {relation} {minimum:g}, got {name}={value!r}")


def _check_int(name: str, value: Any, *, minimum: int, why: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        reason = f" ({why})" if why else ""
        raise ValueError(f"{name} must be >= {minimum}, got {name}={value!r}{reason}")
