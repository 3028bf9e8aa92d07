"""Renderers of a RunPlan: terminal (rich) and Markdown share one section model; JSON and YAML come from the
pydantic models themselves."""
