"""Subagents: the engine behind the `task` tool.

agents.py (which agent, which tools), loop.py (the agent loop), transcripts.py (what
task_id resumes), running.py (max_concurrent, calls an ask interrupted), background.py
(a task on its own thread, adopted by the process tools), tasks.py (start, resume,
finish). An engine: it never imports tools/ or transports/.
"""
