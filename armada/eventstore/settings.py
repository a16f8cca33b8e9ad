"""The ``database`` settings area."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from armada.model.settings_area import SettingsArea


class DatabaseSettings(SettingsArea):
    url: Annotated[
        str,
        Meta(
            description="SQLAlchemy URL of the database. The default is an embedded SQLite file; "
            "use postgresql+psycopg://user@host:5432/db for PostgreSQL."
        ),
    ] = "sqlite:///armada.db"
    pool_size: Annotated[int, Meta(ge=1, description="Connections kept open to PostgreSQL.")] = 10
