"""cuda-llm's engine: tasks, the candidate contract, NVRTC compilation, GPU judging and the FSR loop.

Nothing under this package imports Textual or `app`: the TUI and the headless CLI are two consumers
of the same engine API and events.
"""

__version__ = "0.1.0"
