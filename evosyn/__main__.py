"""``python -m evosyn`` runs the CLI."""

from evosyn.cli import main

main()
