"""Sample scripts for `attn-tui trace --sample NAME`: attention written the way the study notes write it."""
