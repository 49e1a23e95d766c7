"""`python -m soev_pipeline.reference`: serve the reference assistant until interrupted."""

import sys

from .command import main

sys.exit(main())
