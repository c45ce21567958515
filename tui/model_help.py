"""How to configure a model: one text shared by the headless CLI and the TUI's no-model screen."""

MODEL_HELP = """\
labtui needs a language model. Without one configured, it runs its own on this machine
(Qwen2.5-Coder-1.5B-Instruct: 1.1 GB, nothing leaves the machine): `labtui model pull` sets it
up ([models] local = false in labtui.toml turns it off). Or configure one, then run `labtui`:

  A hosted model (any litellm model string, with its provider key):
      export LABTUI_MODEL=anthropic/claude-sonnet-4-5
      export ANTHROPIC_API_KEY=...
    or
      export LABTUI_MODEL=openai/gpt-4o-mini
      export OPENAI_API_KEY=...

  A local OpenAI-compatible server (vLLM, Ollama, llama.cpp):
      export LABTUI_MODEL=openai/<model-name>
      export LABTUI_API_BASE=http://127.0.0.1:8000/v1

  Or write it into the project's labtui.toml:
      [models]
      default = "openai/<model-name>"
      api_base = "http://127.0.0.1:8000/v1"
      review = "anthropic/claude-sonnet-4-5"   # per stage, optional

`labtui doctor` shows what is configured (keys: present or missing, never printed)."""
