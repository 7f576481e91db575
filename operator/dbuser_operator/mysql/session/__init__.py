"""How the operator talks to a server: connection settings and TLS, the connection pool, statements, the
health probe, and what server it reached."""
