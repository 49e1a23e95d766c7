"""The code location of a project: `definitions` builds it; `workspace_for` lists several."""

from soev_pipeline.project.listing import ListedProject

MODULE = "soev_pipeline.orchestration.location.definitions"


def workspace_for(projects: list[ListedProject]) -> str:
    """A workspace.yaml that serves each listed project as a code location of its own."""
    lines = ["load_from:"]
    for item in projects:
        lines += [
            "  - python_module:",
            f"      module_name: {MODULE}",
            f"      attribute: {item.name}",
            f"      location_name: {item.name}",
        ]
    return "\n".join(lines) + "\n"


__all__ = ["MODULE", "workspace_for"]
