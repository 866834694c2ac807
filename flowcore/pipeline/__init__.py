"""Pipelines: graphs of stored blocks written as JSON, checked and compiled to engine graphs."""

from flowcore.pipeline.compiler import check_pipeline, compile_pipeline, load_pipeline_blocks
from flowcore.pipeline.model import Pipeline, PipelineEdge, PipelineError, PipelineNode
from flowcore.pipeline.plan import (
    PlanStep,
    TaskPlan,
    as_pipeline,
    compile_task_plan,
    load_definition,
)
from flowcore.pipeline.runner import (
    EventCallback,
    PipelineRunner,
    check_run_inputs,
    check_run_request,
    input_keys,
)
from flowcore.pipeline.schedule import CronSchedule, ScheduleError, ScheduleSpec, parse_cron
from flowcore.pipeline.validation import load_checked_definition, validate_definition

__all__ = [
    "CronSchedule",
    "EventCallback",
    "Pipeline",
    "PipelineEdge",
    "PipelineError",
    "PipelineNode",
    "PipelineRunner",
    "PlanStep",
    "ScheduleError",
    "ScheduleSpec",
    "TaskPlan",
    "as_pipeline",
    "check_pipeline",
    "check_run_inputs",
    "check_run_request",
    "compile_pipeline",
    "compile_task_plan",
    "input_keys",
    "load_checked_definition",
    "load_definition",
    "load_pipeline_blocks",
    "parse_cron",
    "validate_definition",
]
