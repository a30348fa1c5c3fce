"""`python -m attn_tui` runs the same entry point as the `attn-tui` script."""

from attn_tui.cli import main

raise SystemExit(main())
