"""The book model and its loading: config, the file index, the chapter list, chapters with their anchors and links, the resolver, the languages' views."""
