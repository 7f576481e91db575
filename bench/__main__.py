"""``python -m bench``: run the benchmarks (see ``bench/README.md``)."""

from bench.cli import main

raise SystemExit(main())
