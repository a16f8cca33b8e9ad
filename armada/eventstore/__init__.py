"""eventstore package."""
