"""Client certificates from cert-manager: distinguished names as MySQL compares them and as cert-manager takes
them, the ``Certificate`` the operator asks for, and what an issued one says (no Kubernetes client here)."""
