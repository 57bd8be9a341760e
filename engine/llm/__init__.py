"""Model providers behind one async, streaming interface: ollama, OpenAI-compatible, replay."""
