"""What the tool checks without writing the book: links, the scripts the chapters link to, the markdown source."""
