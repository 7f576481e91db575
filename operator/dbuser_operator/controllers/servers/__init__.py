"""The server handles every kind works through (one MySQL server each: pool, probe, bookkeeping schema),
their registry, resolver, liveness and the reserved admins; the MySQLServer and ClusterMySQLServer kinds'
own controller is in :mod:`..mysqlserver`."""
