"""tune_risk."""
