"""Authentication and authorization: who is calling (users, API tokens, OIDC subjects), whether the
route they call lets them (roles and grants against the permission each route declares), and the
audit log of what they changed or were refused.

``guard.init_app`` wires it into the application; ``cli_auth`` and ``api`` manage principals and grants.
"""
