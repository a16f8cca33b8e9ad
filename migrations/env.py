"""Alembic environment: migrations run on a connection handed over by armada.

``armada.eventstore.migrate`` opens the connection (SQLite or PostgreSQL) and passes it in
``config.attributes["connection"]``; there is no URL configuration here.
"""

from alembic import context

from armada.eventstore.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
