from gpu_session import gpu  # noqa: F401  (the session-wide GPU fixture)
