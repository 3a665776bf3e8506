"""GP algebra shared by ERAHBO and OSCBO, with no settings and no engine (docs/algorithms.md §1.4, §3.1).

* ``exact``: kernels (RBF, Matérn-5/2, ARD), the Cholesky factor with jitter, the output standardiser
  and the exact posterior of a GP with fixed hyperparameters (``ExactPosterior``).
* ``models``: hyperparameters (``GPHyperparameters``) MAP-fitted with BoTorch, and ``ConditionedGP``, a
  GP with frozen hyperparameters conditioned on new data by hand (checked against BoTorch).
"""
