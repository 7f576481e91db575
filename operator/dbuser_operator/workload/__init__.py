"""Workload identity: accounts bound to a ServiceAccount, whose pods log in with a client certificate the
operator signs (Kubernetes Pod Certificates) instead of a password."""
