"""Benchmarks of dbuser-operator against a real local API server and MySQL server (``python -m bench``).

Three implementations of the same job are measured on the same servers: the operator itself, a
straight-line "floor" doing only the unavoidable work (:mod:`bench.floor`), and a minimal kopf operator as
a peer (:mod:`bench.kopf_peer`). See ``bench/README.md``.

Every benchmark that starts a local API server, etcd or MySQL server stops them when it is stopped: SIGTERM
is made an interrupt here, as Ctrl-C is, so that its teardowns run (by default SIGTERM ends the process at
once, and its servers, each in a session of its own, are left running). Only SIGKILL can leave one behind.
"""

import threading

from dbuser_operator.envtest.process import stop_servers_on_sigterm

if threading.current_thread() is threading.main_thread():
    stop_servers_on_sigterm()
