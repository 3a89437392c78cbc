"""A book script imported by its path, once per test process, so that tests call its functions in process."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType


def load_script(script: Path) -> ModuleType:
    """The script as a module named after its file (whatever the file's suffix, or none), cached in sys.modules,
    where dataclasses look their module up while the script's classes are made."""
    name = "script_" + re.sub(r"\W", "_", script.stem)
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_loader(name, importlib.machinery.SourceFileLoader(name, str(script)))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return module
