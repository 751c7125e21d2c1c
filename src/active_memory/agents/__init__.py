"""The LLM machinery: providers, read-only tools, the tool loop and the four specialists.

It knows nothing of the postmortem that drives it (``active_memory.postmortem``, one layer up):
the specialists receive their batches and host facts as data.
"""
