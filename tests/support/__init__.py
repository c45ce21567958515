"""Everything the tests share: the TEST-ONLY scripted LLM server and fake arXiv and Semantic
Scholar servers on 127.0.0.1, recorded answers of a real model, scripted research, the TUI
scenes behind the snapshots and the README pictures, and small fixtures of data.
"""
