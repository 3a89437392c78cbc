"""The one parser (create_markdown) and its rules, GitHub's heading ids and the raw-HTML allowlist: markdown in, tokens out."""
