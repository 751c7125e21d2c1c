"""Adapters that produce a RunRecord from recorded sources."""
