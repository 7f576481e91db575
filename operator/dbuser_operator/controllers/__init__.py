"""Controllers of the operator: how each kind's API maps onto the runtime and the MySQL layer.

Folded by kind: ``kit`` (what every kind shares, the reconcile frame first), ``servers`` (the server
resources and the handles every kind works through), ``policy`` (the servers' namespace policies), and one
folder per kind (``databaseuser``, ``databaserole``) with its reconciler and its ``setup()``.
"""
