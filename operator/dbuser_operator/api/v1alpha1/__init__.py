"""The operator's Kubernetes API, version v1alpha1, as a package: for now the whole API of the former module
``v1alpha1`` is in :mod:`.databaseuser`, re-exported here under the same names (the next commit splits it
into one module per kind plus the shared types)."""

from dbuser_operator.api.v1alpha1.databaseuser import *  # noqa: F403
from dbuser_operator.api.v1alpha1.databaseuser import _cel_format as _cel_format
from dbuser_operator.api.v1alpha1.databaseuser import _Model as _Model
