"""The scripts a book links to: found through the model, each checked to start."""
