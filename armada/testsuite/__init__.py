"""Runner of upstream Armada's YAML test cases (``armada testsuite run``) against a server."""
