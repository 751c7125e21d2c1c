"""The data models: lessons and their changes, run records, runtime configuration."""
