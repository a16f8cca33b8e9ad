"""A PostgreSQL URL naming a primary and its standbys (``?host=a:p&host=b:q``) reaches libpq,
for the LISTEN and leader-election connections, as libpq's own host list."""

from armada.eventstore.dialects import libpq_conninfo


def test_several_hosts_become_libpq_host_and_port_lists() -> None:
    url = (
        "postgresql+psycopg://armada:secret@/armada?host=db-0:5432&host=db-1:5433&host=db-2"
        "&target_session_attrs=read-write"
    )
    assert libpq_conninfo(url) == (
        "host=db-0,db-1,db-2 port=5432,5433, dbname=armada user=armada password=secret "
        "target_session_attrs=read-write"
    )


def test_one_host_stays_a_url() -> None:
    url = "postgresql+psycopg://armada@db:5432/armada?sslmode=require"
    assert libpq_conninfo(url) == "postgresql://armada@db:5432/armada?sslmode=require"
