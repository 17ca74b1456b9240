import sys

from pathserver.cli import main

sys.exit(main())
