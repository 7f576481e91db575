"""Controllers of the operator: how the ``DatabaseUser`` API maps onto the runtime and the MySQL layer."""
