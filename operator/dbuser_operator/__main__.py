"""``python -m dbuser_operator``: the same entry point as the ``dbuser-operator`` console script."""

from dbuser_operator.cli import main

raise SystemExit(main())
