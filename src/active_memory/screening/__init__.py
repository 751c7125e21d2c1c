"""Screening: secrets, planted instructions and source positions in text that may reach an agent.

Evidence redaction, store import and revert, and admission all use these detectors, so what one
refuses the others refuse too. Two maintained packages stand under them: detect-secrets for
credential formats (:mod:`.detectors`) and disarm for the Unicode TR39 confusables table
(:mod:`.confusables`). :mod:`.frame` alone is standard library only and imports nothing at
import time: the recall renderer on the hook path uses it.

Which signal refuses and which only quarantines is :mod:`.verdict`'s.
"""
