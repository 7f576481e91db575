"""Controllers of the operator: how each kind's API maps onto the runtime and the MySQL layer.

Folded by floor, lowest first: ``kit`` (what every kind shares, the reconcile frame first), ``servers`` (the
server handles every kind works through), ``policy`` (the servers' namespace policies and the guard),
``shared`` (what every kind's ``setup()`` gets), and one folder per kind (``mysqlserver``, ``database``,
``databaserole``, ``databaseuser``) with its reconciler and its ``setup()``. No module imports a higher
floor (``tests/unit/test_layering.py``).
"""
