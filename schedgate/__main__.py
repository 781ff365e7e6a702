import sys

from schedgate.cli import main

sys.exit(main())
