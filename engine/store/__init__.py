"""Sessions recorded in SQLite: every prompt, reply, judgement and decision."""
