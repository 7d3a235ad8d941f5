"""Real training runs: log readers, fits and forecasts, diagnostics, and config checks.

- :mod:`.logs`: read TRL, verl, W&B and generic logs into one :class:`~.logs.TrainingLog`;
- :mod:`.fitting`: fit and forecast reward curves with the theory's model families;
- :mod:`.diagnostics`: failure-mode detectors from logged metrics;
- :mod:`.check_config`: map a TRL/verl config onto the model and predict its dynamics.
"""
