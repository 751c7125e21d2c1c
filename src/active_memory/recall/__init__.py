"""Recall: signals from tool calls, resident indexes, budgeted rendering, the broker."""
