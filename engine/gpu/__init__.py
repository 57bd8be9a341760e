"""The GPU side: a worker process per GPU (driver API, validation, profiling, peaks) and its client."""
