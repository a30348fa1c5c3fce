"""The installed `attn-tui` script (not the source tree) finds every sample."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from attn_tui.ask.samples import load_samples

pytestmark = pytest.mark.slow


def test_installed_script_lists_samples(tmp_path: Path) -> None:
    script = shutil.which("attn-tui")
    if script is None:
        assert not os.environ.get("CI"), "CI installs the package: attn-tui must be on PATH"
        pytest.skip("attn-tui is not installed in this environment")
    result = subprocess.run([script, "samples"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    listed = [line.split()[0] for line in result.stdout.splitlines() if line.strip()]
    assert listed[:len(load_samples())] == list(load_samples())
    assert "self_attention" in listed[len(load_samples()):]  # then the sample scripts of `attn-tui trace`
