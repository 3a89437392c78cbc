"""GitHub's own test suites (../shared/conformance) run through the tool, and cmark-gfm as an oracle."""
