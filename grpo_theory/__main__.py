"""``python -m grpo_theory`` is the ``grpo-theory`` command."""

import sys

from grpo_theory._console import main

sys.exit(main())
