"""The HTML site backend: pages, navigation, search, the language switcher."""
