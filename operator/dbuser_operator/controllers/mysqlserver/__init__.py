"""The MySQLServer and ClusterMySQLServer kinds: their reconciler (connection, health, status, finalizer) and
their ``setup()``; the server handles every kind works through stay in :mod:`..servers`."""
