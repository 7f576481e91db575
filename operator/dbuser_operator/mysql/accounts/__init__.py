"""Accounts and roles on the server: creating and dropping them, their passwords and authentication
plugins, limits, lock policy, TLS identity and owner metadata, what they hold, and their open sessions."""
