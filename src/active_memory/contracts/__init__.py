"""Specialist JSON contracts and host admission."""
