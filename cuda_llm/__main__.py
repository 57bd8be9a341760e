"""`python -m cuda_llm`: the `cuda-llm` command, for a machine where the console script is not on PATH."""

import sys

from cuda_llm.app.launcher import main

sys.exit(main())
