"""Know the cost before the run: per stage, the model calls, tokens, dollars, model time and
experiment time a project is expected to take, with a low–high range, each number computed from a
named input: the model's speed on this machine (``speeds``, kept in the user's cache), the
project's own prompt texts (``project_sizes``), its journal (``history``) and the real-model
bench's calibration table shipped as data (``calibration``). ``estimator`` makes the estimate,
``render`` words it, ``reckoning`` holds it against what happened. May import: local_model (the
user's cache), workspace, settings, journal and the layers below; the layers are pyproject.toml's
import-linter contract.
"""
