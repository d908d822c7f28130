"""`python -m transformer`: the command line of `transformer.cli`."""

from .cli import main

raise SystemExit(main())
