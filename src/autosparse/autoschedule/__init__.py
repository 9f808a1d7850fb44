"""Autoschedulers: enumerate schedules, cost them, keep a frontier, select one for the inputs at hand."""
