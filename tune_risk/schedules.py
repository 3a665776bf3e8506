"""β_stop schedules for ERAHBO's stop rule (ERAHBO App. C.5, eqs. 35–36; docs/algorithms.md §1.9).

The stop-rule confidence multiplier is ``β_stop,t = β_stop,max · s(τ)`` with ``β_stop,max = 1`` and
the normalised progress ``τ = N_used / N_max ∈ [0, 1]``, evaluated once at the start of a round
(A-12).  Each schedule ``s`` satisfies ``s(0) = 0``, ``s(1) = 1`` and is non-decreasing, except the
paper's default ``constant`` (``s ≡ 1``).  The formulas below are rewritten so that they neither
overflow nor cancel catastrophically for large ``γ`` or ``s``, and reduce to ``τ`` in the
``γ → 0`` / ``s → 0`` limits.
"""

from __future__ import annotations

import math
import numbers

SCHEDULES: tuple[str, ...] = ("constant", "exponential", "sigmoid")
"""Valid values of ``beta_stop_schedule``."""

DEFAULT_PARAMS: dict[str, float | None] = {"constant": None, "exponential": 50.0, "sigmoid": 10.0}
"""Default schedule parameter: γ = 50 (the paper's XLand example), s = 10 (docs/algorithms.md §1.9)."""

_TINY = 1e-100  # below this |γ| or |s| the schedule equals its limit τ to within ~1e-200


def validate_schedule(name: str, param: float | None = None) -> float | None:
    """Check a schedule name and parameter; return the parameter to use (default filled in).

    Args:
        name: one of :data:`SCHEDULES`.
        param: γ for ``exponential`` (any finite real; default 50), ``s`` for ``sigmoid`` (any
            finite real, its sign is irrelevant; default 10), and ``None`` for ``constant``.

    Raises:
        ValueError: naming ``beta_stop_schedule`` or ``schedule_param`` and the valid
            values.
    """
    if not isinstance(name, str) or name not in SCHEDULES:
        raise ValueError(f"beta_stop_schedule must be one of {SCHEDULES}, got {name!r}.")
    if name == "constant":
        if param is not None:
            raise ValueError(
                f"schedule_param must be None for beta_stop_schedule='constant', got {param!r}."
            )
        return None
    if param is None:
        return DEFAULT_PARAMS[name]
    if isinstance(param, bool) or not isinstance(param, numbers.Real) or not math.isfinite(param):
        symbol = "gamma" if name == "exponential" else "s"
        raise ValueError(
            f"schedule_param ({symbol} of the {name!r} schedule) must be a finite real "
            f"number or None, got {param!r}."
        )
    return float(param)


def _exponential(tau: float, gamma: float) -> float:
    r"""ERAHBO eq. 35: ``s(τ) = (e^{γτ} − 1) / (e^{γ} − 1)``.

    For ``γ > 0`` it is evaluated as ``e^{γ(τ−1)} · expm1(−γτ) / expm1(−γ)``, which cannot
    overflow; for ``γ < 0`` as ``expm1(γτ) / expm1(γ)``; ``γ → 0`` gives ``τ``.
    """
    if abs(gamma) < _TINY:
        return tau
    if gamma > 0.0:
        return math.exp(gamma * (tau - 1.0)) * (math.expm1(-gamma * tau) / math.expm1(-gamma))
    return math.expm1(gamma * tau) / math.expm1(gamma)


def _sigmoid(tau: float, s: float) -> float:
    r"""ERAHBO eq. 36: ``s(τ) = (σ_s(τ) − σ_s(0)) / (σ_s(1) − σ_s(0))``, ``σ_s(τ) = 1/(1 + e^{s(τ−½)})``.

    Using ``σ_s(τ) = ½ (1 − tanh(s(τ − ½)/2))`` the ratio becomes

    .. math:: s(τ) = \frac{\tanh(a(2τ − 1)/4) + \tanh(a/4)}{2 \tanh(a/4)},\qquad a = |s|,

    which shows the invariance to the sign of ``s`` (``σ_{−s} = 1 − σ_s``), is exact at
    ``τ ∈ {0, 1}``, never overflows and tends to ``τ`` as ``s → 0``.
    """
    a = abs(s)
    if a < _TINY:
        return tau
    half = math.tanh(a / 4.0)
    return (math.tanh(a * (2.0 * tau - 1.0) / 4.0) + half) / (2.0 * half)


def schedule_value(name: str, tau: float, param: float | None = None) -> float:
    """Schedule factor ``s(τ)`` so that ``β_stop,t = β_stop,max · s(τ)`` (docs/algorithms.md §1.9).

    Args:
        name: ``"constant"`` (``s ≡ 1``, paper default), ``"exponential"`` (eq. 35, parameter γ,
            default 50) or ``"sigmoid"`` (eq. 36, parameter ``s``, default 10).
        tau: normalised progress ``N_used / N_max``; clipped to ``[0, 1]``.
        param: the schedule parameter, or ``None`` for its default.

    Returns:
        ``s(τ) ∈ [0, 1]``.

    Raises:
        ValueError: for an unknown name, a bad parameter or a NaN ``tau``.
    """
    param = validate_schedule(name, param)
    tau = float(tau)
    if math.isnan(tau):
        raise ValueError("tau must be a number in [0, 1] (it is clipped), got nan.")
    tau = min(max(tau, 0.0), 1.0)
    if name == "constant":
        return 1.0
    value = _exponential(tau, param) if name == "exponential" else _sigmoid(tau, param)
    return min(max(value, 0.0), 1.0)
