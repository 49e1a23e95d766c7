"""An evaluation project on disk: loading it, sealing its test split, and its paths."""

from .loading import LoadedProject, Suite, load, load_for_sealing, read_project
from .owned import owned_paths
from .paths import ProjectPaths, probes_file, state_dir
from .sealing import SEAL_FILE, SealResult, check_seal, read_seal, write_seal

__all__ = [
    "SEAL_FILE",
    "LoadedProject",
    "ProjectPaths",
    "SealResult",
    "Suite",
    "check_seal",
    "load",
    "load_for_sealing",
    "owned_paths",
    "probes_file",
    "read_project",
    "read_seal",
    "state_dir",
    "write_seal",
]
