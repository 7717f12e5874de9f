"""`python -m bridgebench`: the same command as `bridgebench`."""

from bridgebench.cli import main

main()
