"""Screening: secrets, planted instructions and source positions in text that may reach an agent.

Evidence redaction, store import and revert, and admission all use these detectors, so what one
refuses the others refuse too. Two maintained packages stand under them: detect-secrets for
credential formats (:mod:`.detectors`) and disarm for the Unicode TR39 confusables table
(:mod:`.confusables`). :mod:`.frame` alone is standard library only and imports nothing at
import time: the recall renderer on the hook path uses it.

Planted instructions are looked for in every view of the text a model reads through
(:mod:`.normalise`: leetspeak, letter-spacing, markup, decoded runs) and in eleven languages
besides English (:mod:`.languages` over the phrase tables of ``phrases.toml``). No maintained
library fits here: the field's multilingual detectors are transformer classifiers (torch-sized,
weights fetched from a model hub, tens of milliseconds a call), so the tables are ours.

Which signal refuses and which only quarantines is :mod:`.verdict`'s.
"""
