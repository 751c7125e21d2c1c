"""Harness hook adapters (Claude Code, Codex, Copilot, pi) and their installer."""
