"""The candidate contract: what a model's reply must contain and how it binds to a task.

The model writes device code only; the harness owns allocation, copies and launches. A reply is one
fenced `cuda` block and one fenced `json` launch plan (DESIGN.md section 4).
"""
