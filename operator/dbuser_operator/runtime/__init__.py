"""A controller-runtime-like reconcile engine on kubernetes-asyncio.

Generic: it knows the Kubernetes API, watches, queues, leases, metrics and events, and nothing of MySQL or
of ``DatabaseUser``. The semantics follow client-go and controller-runtime (DESIGN.md §3).
"""
