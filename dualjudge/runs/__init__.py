"""Orchestration: the study's steps, the planner and cost estimate, the caching caller, the schedule of jobs
on device groups and the resumable runner."""
