"""``python -m dbuser_operator.kubectl_dbu``: the plugin without its console script."""

import sys

from dbuser_operator.kubectl_dbu.cli import main

sys.exit(main())
