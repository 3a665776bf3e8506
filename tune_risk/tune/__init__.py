"""The Ray Tune adapters of the engine (docs/algorithms.md §2; README, "Using it from an existing Tune script").

* ``searcher``: ``RiskAwareSearch``, the engine as a Tune ``Searcher`` (one trial = one replicate run).
* ``scheduler``: ``ReplicateScheduler``, which stops the trials of cancelled replicates.
* ``space``: Tune ``param_space`` <-> the unit cube (``TuneSpaceCodec``, on ``tune_risk.space``).
* ``restore``: restore points in Tune's snapshots and ``restore_tuner``, which repairs a torn snapshot.

The only layer of ``tune_risk`` that imports Ray Tune (``tune_risk.offline`` uses it too); the public
names are importable from ``tune_risk`` itself.
"""
