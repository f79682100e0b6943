"""The stock agent's prompt texts, read from τ²-bench's source, are τ²-bench's own."""

from __future__ import annotations

import subprocess
import sys

from tau2.agent.llm_agent import AGENT_INSTRUCTION, SYSTEM_PROMPT

from evosyn.environments import get_domain
from evosyn.environments.kit.dialogue import stock_system_prompt


def test_the_stock_system_prompt_is_tau2s_own() -> None:
    domain = get_domain("airline")
    expected = SYSTEM_PROMPT.format(
        agent_instruction=AGENT_INSTRUCTION, domain_policy=domain.policy()
    )
    assert stock_system_prompt(domain) == expected


def test_a_programmatic_rollout_does_not_import_litellm() -> None:
    # litellm costs seconds of start-up; only a model call needs it.
    code = (
        "import sys\n"
        "from evosyn.config import CampaignConfig\n"
        "from evosyn.agents.roles import build_roles\n"
        "from evosyn.tasks.loop import generate_tasks\n"
        "build_roles(CampaignConfig())\n"
        "print('litellm' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
