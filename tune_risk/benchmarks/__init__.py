"""Synthetic objectives with known mean and variance, and offline tables drawn from them.

``objectives``: heteroscedastic test functions (sine, Branin, Hartmann; ERAHBO eqs. 1-5) and
``make_pool_table``, which the replay's synthetic tables, the demo without shipped tables and the tests use.
The OSCBO paper's benchmark harness is lab code: ``experiments/studies/oscbo_harness``.
"""
