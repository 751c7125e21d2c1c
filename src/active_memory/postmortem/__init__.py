"""The postmortem: preparation, batching, review scheduling, publication with conflict rounds,
the report and the single-specialist trial.

Public entry points: :func:`.entry.run_postmortem` with :class:`.options.PostmortemOptions`
(its binding override is :class:`.binding.BindingOverride`) and
:func:`.specialist_trial.try_specialist`. Nothing is imported here, so the light modules
(``report`` for the CLI's printer) load without the machinery behind them.
"""
