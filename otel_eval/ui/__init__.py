"""The web dashboard: server-rendered pages over the SQLite file, served under ``/ui``.

See docs/ui.md. :class:`DashboardApp` is the ASGI app the collector mounts when ``--ui`` is on.
"""

from __future__ import annotations

from .app import DashboardApp, add_ui_arguments, ui_main

__all__ = ["DashboardApp", "add_ui_arguments", "ui_main"]
