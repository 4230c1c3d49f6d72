"""Runnable, instrumented example agents with their golden sets (not part of the installed package)."""
