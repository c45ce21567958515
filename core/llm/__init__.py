"""Every model call: the client (litellm with retries, streaming, JSON re-asks), its failures in
words, the budget ledger, litellm's offline set-up, streamed replies under a watchdog, the response
formats each server accepts, and a local server's idle gate. May import: answers, settings,
checkpoints, retry and the bottom layer; the layers are pyproject.toml's import-linter contract.
"""
