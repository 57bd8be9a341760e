"""The Feature Search and Reinforcement loop: rounds of candidates, judged and fed back."""
