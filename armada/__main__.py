"""``python -m armada`` is the same as the ``armada`` command."""

from armada.cli.main import main

main()
