"""Who may do what: identities, authenticators, permissions and route access policies.

Authentication turns a request's credentials into an :class:`~armada.auth.identity.Identity`
(name and groups); authorisation grants global permissions to groups and queue verbs to
queue owners and permission subjects. Route handlers declare their policy with the helpers
of :mod:`armada.auth.policy`; :mod:`armada.api.access` enforces it on every request.
"""
