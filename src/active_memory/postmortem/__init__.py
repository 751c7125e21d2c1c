"""The postmortem: preparation, batching, review scheduling, publication with conflict rounds, the
report and the single-specialist trial."""
