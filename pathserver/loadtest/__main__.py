"""``python -m pathserver.loadtest``: the same as ``pathserver loadtest``."""

from pathserver.loadtest import main

raise SystemExit(main())
