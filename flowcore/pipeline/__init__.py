"""Pipelines: graphs of stored blocks written as JSON, checked and compiled to engine graphs."""

from flowcore.pipeline.compiler import check_pipeline, compile_pipeline, load_pipeline_blocks
from flowcore.pipeline.model import Pipeline, PipelineEdge, PipelineError, PipelineNode

__all__ = [
    "Pipeline",
    "PipelineEdge",
    "PipelineError",
    "PipelineNode",
    "check_pipeline",
    "compile_pipeline",
    "load_pipeline_blocks",
]
