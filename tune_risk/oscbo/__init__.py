"""OSCBO: online sharp-calibrated lengthscale selection (docs/algorithms.md §3; the OSCBO paper).

* ``gp``: the fixed-hyperparameter Matérn-5/2 GP (outputscale 1, mean 0, noise 0.01).
* ``losses``: the sharpness loss (eq. 6), the calibration constraint (eq. 7) and their closed form
  from one Cholesky factor (S5, S12, S13).
* ``oracle``: the projected-Adam oracle (FTPL and MLL fits).
* ``game``: FTPL primal, OMD dual, the play/recovery latch and the threshold ``M`` (S3).
"""

from tune_risk.gp.exact import standardize
from tune_risk.oscbo.game import GameData, OSCBOConfig, OSCBOGame, nlml_balanced_lambda, omd_step, threshold_M
from tune_risk.oscbo.gp import NOISE, THETA_BOUNDS, FixedGP
from tune_risk.oscbo.losses import (
    RoundLosses,
    calibration_loss,
    closed_form_sums,
    negative_log_marginal_likelihood,
    prequential_factor,
    round_losses,
    sharpness_loss,
)
from tune_risk.oscbo.oracle import fit_lengthscale_mll, projected_adam

__all__ = [
    "NOISE", "THETA_BOUNDS", "FixedGP", "GameData", "OSCBOConfig", "OSCBOGame", "RoundLosses",
    "calibration_loss", "closed_form_sums", "fit_lengthscale_mll", "negative_log_marginal_likelihood", "nlml_balanced_lambda",
    "omd_step", "prequential_factor", "projected_adam", "round_losses", "sharpness_loss", "standardize",
    "threshold_M",
]
