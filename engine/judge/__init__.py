"""Judging a candidate: comparison with the reference, derived figures, and the orchestration of
compile -> validate -> profile."""
