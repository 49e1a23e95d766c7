"""`python -m soev_pipeline`: the soev-evals command."""

from soev_pipeline._console import run

run()
