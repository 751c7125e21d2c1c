"""Lesson storage: the backend interface and its SQLite implementation."""
