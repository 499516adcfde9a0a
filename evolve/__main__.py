"""``python -m evolve ...`` is ``evolve ...``."""

from evolve.cli import main

main()
