"""Benchmarks of dbuser-operator against a real local API server and MySQL server (``python -m bench``).

Three implementations of the same job are measured on the same servers: the operator itself, a
straight-line "floor" doing only the unavoidable work (:mod:`bench.floor`), and a minimal kopf operator as
a peer (:mod:`bench.kopf_peer`). See ``bench/README.md``.
"""
