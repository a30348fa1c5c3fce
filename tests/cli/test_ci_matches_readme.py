"""CI runs the install and test commands exactly as README.md gives them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_step_of_the_readme_test_command_is_in_ci() -> None:
    readme = ROOT.joinpath("README.md").read_text(encoding="utf-8")
    block = readme.split("Run the tests", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    steps = [step.strip() for step in block.strip().split("&&")]
    ci = [line.strip() for line in ROOT.joinpath(".ci", "run").read_text().splitlines()]
    for step in steps[2:]:  # after creating and activating the environment
        # CI may only add to a step what changes the report (pytest's -rs), never what it installs or runs
        assert any(line == step or (line.startswith(step + " ") and step.startswith("python -m pytest"))
                   for line in ci), f"README's step {step!r} is not in .ci/run"
    installs = [line for line in ci if re.match(r"pip install (?!--upgrade)", line)]
    assert installs == [s for s in steps if s.startswith("pip install")], "CI installs what README says, no more"
