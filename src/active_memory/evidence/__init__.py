"""Evidence for the postmortem specialists: paged history under a byte budget."""
