"""`python -m soev_pipeline`: the soev-evals command."""

from soev_pipeline.cli.main import run

run()
