"""Server resources (MySQLServer, ClusterMySQLServer) and the server handles every kind works through."""
