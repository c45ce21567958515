"""TEST-ONLY: a stand-in for llama-cpp-python, so that ``python -m llama_cpp.server`` starts the
stand-in server of ``server/__main__.py`` when this folder leads PYTHONPATH."""
