"""The experiments stage: ``stage`` declares it and chooses between the plan's runs and a search;
``idea_runs`` runs one idea's plan, ``parallel_ideas`` the ideas beside it, ``run_text`` says
what a run did. No other stage imports it (pyproject.toml's independence contract).
"""

from .stage import STAGE, run

__all__ = ["STAGE", "run"]
