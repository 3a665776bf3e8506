"""ERAHBO's statistical model of mean and variance across seeds (docs/algorithms.md §1.2-1.6).

* ``warping``: Vizier's output warper, fitted on a sample and frozen (``FrozenWarp``, ``fit_warp``).
* ``model``: the two GPs (``G_var`` on sample variances, ``G_f`` on sample means with eq. 19's noise),
  their joint fit, and the mean-variance bounds ``UCB^MV``/``LCB^MV`` (``RiskModel``, ``mv_bounds``).
* ``acquisition``: ``UCB^MV`` maximised over a finite pool or the continuous unit cube.

Built on ``tune_risk.gp``; knows ``EngineSettings`` but not the engine that runs it.
"""
