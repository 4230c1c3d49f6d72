"""Rebuilding the real-framework captures in ``tests/data/captures`` (see README.md here)."""
