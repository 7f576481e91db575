"""The shared reconcile frame and what every kind uses: errors, steps, resources, scope, finalizer."""
