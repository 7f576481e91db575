"""The operator's Kubernetes API: pydantic models per version, and the CRD generator (``api.crd``)."""
