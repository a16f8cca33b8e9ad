"""The scheduler service: the leader's cycle, the log follower and in-memory cluster state,
leases and run-event intake, lost runs, leader election and the cycle history.

It drives the pure core in :mod:`armada.scheduling`; everything it needs from the database
goes through :mod:`armada.eventstore`.
"""
