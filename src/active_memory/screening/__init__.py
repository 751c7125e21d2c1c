"""Screening: secrets, planted instructions and source positions in text that may reach an agent.

Evidence redaction, store import and revert, and admission all use these detectors, so what one
refuses the others refuse too. Standard library only.
"""
