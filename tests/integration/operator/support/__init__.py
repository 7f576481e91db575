"""Helpers of the operator's end-to-end tests, by topic: running the operator (``operator``), the API
server (``kube``), the MySQL server (``mysql``), the objects of each kind (``builders``), waiting
(``wait``), rotation, the fleet's servers, replica processes. Fixtures stay in the ``conftest.py`` files."""
