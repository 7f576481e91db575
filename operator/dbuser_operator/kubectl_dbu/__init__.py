"""``kubectl dbu``: the DatabaseUsers of a namespace as their owners see them, with the user's kubeconfig
and RBAC (no credentials of the operator): status, rotate, consumers, connect, why."""
