"""Specialist sessions: providers, read-only tools, the tool loop, the postmortem."""
