"""Wire types of the job and queue REST API, shared by the server and the client.

Field names are camelCase as in upstream Armada's REST gateway. Requests forbid unknown
fields so that a typo is a 400 naming the field rather than a silently ignored setting.
"""
