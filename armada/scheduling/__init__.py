"""scheduling package."""
