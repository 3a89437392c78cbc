"""Browser tests of the HTML site (Playwright driving Debian's Chromium).

This folder is a package so that its conftest.py is imported as `browser.conftest`: without this file pytest
would import it under the plain name `conftest`, replacing tests/conftest.py for every later `from conftest
import ...` in the suite.
"""
