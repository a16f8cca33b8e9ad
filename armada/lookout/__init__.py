"""Lookout, the web UI: its query services (jobs table, groups, detail, overview) and static app."""

from pathlib import Path

#: The browser app: ES modules, CSS and the HTML shell, served as they are (no build step).
STATIC_DIR = Path(__file__).parent / "static"
