"""Link checks: local against the model, external URLs politely, LinkChecker over the built site, the replay of an unchanged run."""
