import sys

from jaxdp.cli import main

sys.exit(main())
