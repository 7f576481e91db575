"""The DatabaseUser steps, one module each; their order is in :mod:`..setup`."""
