"""`python -m lean_mod_add_proof.cli`."""

import sys

from lean_mod_add_proof.cli import main

sys.exit(main())
