"""cuda-llm's engine: tasks, the candidate contract, NVRTC compilation, GPU judging and the FSR loop.

Nothing under this package imports Textual or `app`: the TUI and the headless CLI are two consumers
of the same engine API and events.
"""

from cuda_llm import __version__

__all__ = ["__version__"]
