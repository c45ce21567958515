"""TEST-ONLY: the stand-in for llama-cpp-python's OpenAI-compatible server (``__main__.py``)."""
