"""The Database kind: a MySQL/MariaDB database, its character set and collation, and its ownership."""
