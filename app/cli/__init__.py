"""The headless commands (`cuda-llm tasks`, `eval`, `doctor`, ...). Imports stay inside the commands
so `cuda-llm --help` loads neither CUDA nor NumPy nor Textual."""
