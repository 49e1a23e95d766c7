"""`python -m soev_pipeline`: the soev-evals command."""

import sys

from soev_pipeline.cli.main import main

sys.exit(main())
