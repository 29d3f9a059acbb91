import sys

from groupcoord.cli import main

sys.exit(main())
