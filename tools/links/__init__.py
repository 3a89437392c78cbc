"""The link model: every link of the book with its source position and what it resolves to."""
